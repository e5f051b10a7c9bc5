#!/usr/bin/env python3
"""Checks the memtrace collector against valgrind lackey.

usage: memtrace_oracle.py RETICLE WORKDIR -- PROGRAM [ARGS...]

PROGRAM must be a non-PIE main executable (its run-time addresses are its
link-time ones under reticle and under valgrind). Under `reticle run -c
memtrace` its output and exit status are the native run's. Then, for every
instruction of its relocated functions, the accesses reticle recorded by
kind (the mem_loads, mem_stores and mem_modifies metrics) equal what
`valgrind --tool=lackey --trace-mem=yes` lists for that instruction ('L',
'S' and 'M' lines after its 'I' line) in a run of the same program: the
stream of the main executable, instruction by instruction (the program is
deterministic; its threads' interleaving does not change a count). PLT
stubs, which reticle leaves as they are, and instructions reticle reports
as untraced (mem_untraced_instructions) are left out and counted. The
profile's cache meta must hold every access: its L1D loads + stores (a
modify counts as a load in cachegrind's model) equal memtrace_accesses.
`reticle report -f cachegrind` is read by cg_annotate, per function of
the program gives cachegrind's own Dr and Dw, and its summary's D1 misses
are the profile's (but for accesses of code in no function). With --trace
the din trace holds the profile's accesses by kind and `reticle cachesim`
reads it whole. With --sample periodic:5000:15000 the output is the
native one and about a quarter of the accesses are simulated.
The static analysis (accesses chained within blocks, MetaSim's) changes no
result: with --no-chain every access of the program is its
own record and the accesses per instruction are the same, while the
default run's meta says fewer instructions have records; and bzip2's
stream (under setarch -R, as a din trace) is the same line by line, kind,
size and address, but for loads from the copies' own jump tables (their
addresses move with the copies' sizes). Skips (77) without valgrind."""
import collections, json, os, shutil, sqlite3, subprocess, sys

KIND = {"mem_loads": "L", "mem_stores": "S", "mem_modifies": "M"}


def instrumented(meta):
    """(instructions with a record, memory instructions) from the meta."""
    w = meta.get("memtrace_instrumented", "").split()
    return (int(w[0]), int(w[2])) if len(w) > 2 else (-1, -1)


def static_analysis(reticle, work, prog, path, mine, meta, fails):
    env0 = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache0"))
    db0 = os.path.join(work, "m0.db")
    subprocess.run([reticle, "run", "-c", "memtrace", "--no-chain", "-o", db0, "--"] + prog, capture_output=True,
                   env=env0, timeout=600)
    con = sqlite3.connect(db0)
    theirs = collections.Counter()
    for site, name, value in con.execute(
            "select m.site, m.name, m.value from metrics m join functions f on f.id = m.function "
            "join modules mo on mo.id = f.module where mo.path = ?", (path,)):
        if name in KIND:
            theirs[(site, KIND[name])] += int(value)
    differ = sorted(k for k in set(mine) | set(theirs) if mine[k] != theirs[k])
    with_, without = instrumented(meta), instrumented(dict(con.execute("select key, value from meta")))
    print(f"memtrace: static analysis: {with_[0]} of {with_[1]} memory instructions with a record, "
          f"{without[0]} of {without[1]} without it; accesses per instruction differ at {len(differ)}")
    if differ:
        fails.append(f"without the static analysis, accesses per instruction differ: {differ[:8]}")
    if not (0 < with_[0] < with_[1]) or without[0] != without[1]:
        fails.append(f"instructions with a record: {with_} with the analysis, {without} without")
    bz = shutil.which("bzip2")
    if not bz or not shutil.which("setarch"):
        print("memtrace: no bzip2 or setarch: stream order not compared")
        return
    src = os.path.join(work, "in.txt")
    with open(src, "w") as f:
        f.write("".join(f"{i * 7919 % 1000} reticle {i % 13} chain\n" for i in range(300)))
    traces = []
    for chain in ("1", "0"):
        t = os.path.join(work, f"bz{chain}.din")
        e = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache" + chain))
        r = subprocess.run(["setarch", "-R", reticle, "run", "-c", "memtrace", "--trace", t, "-o",
                            os.path.join(work, f"bz{chain}.db")] + ([] if chain == "1" else ["--no-chain"]) +
                           ["--", bz, "-c", src], capture_output=True, env=e, timeout=600)
        traces.append(open(t).read().splitlines() if r.returncode == 0 and os.path.exists(t) else [])
        if os.path.exists(t):
            os.unlink(t)
    a, b = traces
    moved = sum(1 for x, y in zip(a, b) if x != y)
    shape = sum(1 for x, y in zip(a, b) if x.split()[0::2] != y.split()[0::2])
    print(f"memtrace: bzip2's stream with and without the analysis: {len(a)} and {len(b)} accesses, "
          f"{moved} at another address, {shape} of another kind or size")
    if not a or len(a) != len(b) or shape or moved > len(a) // 1000:
        fails.append(f"bzip2's stream: {len(a)} against {len(b)} accesses, {moved} moved, {shape} reshaped")


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    if not shutil.which("valgrind"):
        print("SKIP: no valgrind")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    fails = []
    native = subprocess.run(prog, capture_output=True, text=True, timeout=300)
    db = os.path.join(work, "m.db")
    r = subprocess.run([reticle, "run", "-c", "memtrace", "-o", db, "--"] + prog, capture_output=True,
                       text=True, env=env, timeout=600)
    if r.returncode != native.returncode or r.stdout != native.stdout:
        fails.append(f"under memtrace: status {r.returncode} (native {native.returncode}), "
                     f"output {r.stdout!r} (native {native.stdout!r})\n{r.stderr[-2000:]}")
    if "named no access" in r.stderr:
        fails.append("records without an access: " + r.stderr.strip())
    log = os.path.join(work, "lackey.txt")
    subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={log}"] + prog,
                   capture_output=True, timeout=600)
    path = os.path.realpath(prog[0])
    con = sqlite3.connect(db)
    fns = con.execute("select f.id, f.name, f.addr, f.size, f.instrumented from functions f join modules m "
                      "on m.id = f.module where m.path = ?", (path,)).fetchall()
    ranges = sorted((a, a + s, name) for _, name, a, s, inst in fns if inst and s)
    plt = sorted((a, a + s) for _, name, a, s, inst in fns if not inst and s)
    mine = collections.Counter()
    untraced = set()
    for site, name, value in con.execute(
            "select m.site, m.name, m.value from metrics m join functions f on f.id = m.function "
            "join modules mo on mo.id = f.module where mo.path = ?", (path,)):
        if name in KIND:
            mine[(site, KIND[name])] += int(value)
        elif name == "mem_untraced_instructions":
            untraced.add(site)
    meta = dict(con.execute("select key, value from meta"))
    # reticle report's caches table: each level's accesses and misses as the meta has them
    rep = subprocess.run([reticle, "report", db], capture_output=True, text=True, timeout=120)
    rows = {}
    for line in rep.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0].isdigit() and f[1] in ("L1I", "L1D", "L1", "L2", "L3"):
            rows[f"memtrace_cache_{f[0]}_{f[1].lower()}"] = (int(f[3]), int(f[4]))
    for k, v in meta.items():
        if k.startswith("memtrace_cache_"):
            w = v.split(": ", 1)[1].split()
            if rows.get(k) != (int(w[1]) + int(w[4]), int(w[2]) + int(w[5])):
                fails.append(f"reticle report's caches table: {k} is {rows.get(k)}, the meta {v!r}")

    def function_of(a):
        for lo, hi, name in ranges:
            if lo <= a < hi:
                return name
        return None

    theirs = collections.Counter()
    left_out = collections.Counter()
    cur = None
    with open(log) as f:
        for line in f:
            if line.startswith("I "):
                cur = int(line[3:].split(",")[0], 16)
            elif line[:2] in (" L", " S", " M") and cur is not None:
                if cur in untraced:
                    left_out["untraced"] += 1
                elif function_of(cur):
                    theirs[(cur, line[1])] += 1
                elif any(lo <= cur < hi for lo, hi in plt):
                    left_out["plt"] += 1
    keys = sorted(set(theirs) | set(mine))
    differ = [(a, k) for a, k in keys if theirs[(a, k)] != mine[(a, k)] and function_of(a)]
    print(f"memtrace: {sum(theirs.values())} accesses of {len(keys)} (instruction, kind) pairs by lackey, "
          f"{sum(mine.values())} recorded; left out: {dict(left_out)}")
    for a, k in differ[:15]:
        fails.append(f"{function_of(a)} {a:#x} {k}: lackey {theirs[(a, k)]}, reticle {mine[(a, k)]}")
    if len(differ) > 15:
        fails.append(f"... {len(differ)} differ in all")
    if sum(theirs.values()) < 100000:
        fails.append(f"only {sum(theirs.values())} accesses compared")
    # the cachegrind export: cg_annotate reads it; per function of the
    # program that cachegrind names, Dr (loads and modifies) and Dw equal
    # cachegrind's own; its summary's D1 misses are the profile's. (Not
    # compared with cachegrind's misses: the libraries' code and addresses
    # differ under valgrind, and two threads share the simulated caches in
    # another interleaving; the bank itself is checked against cachegrind
    # on one stream by tests/analysis.)
    cgf = os.path.join(work, "cg.out")
    rep = subprocess.run([reticle, "report", "-f", "cachegrind", "-o", cgf, db], capture_output=True, text=True)
    ann = subprocess.run(["cg_annotate", cgf], capture_output=True, text=True) if rep.returncode == 0 else None
    if rep.returncode != 0 or not ann or ann.returncode != 0:
        fails.append(f"cachegrind export: {rep.stderr.strip()} {ann.stderr.strip() if ann else ''}")
    else:
        vgcg = os.path.join(work, "vg.cg")
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64",
                        "--LL=8388608,16,64", f"--cachegrind-out-file={vgcg}"] + prog, capture_output=True,
                       timeout=600)
        def per_fn(path, events):
            out, fn, fl, ev = collections.defaultdict(lambda: [0] * len(events)), None, None, []
            for line in open(path):
                if line.startswith("events:"):
                    ev = line.split()[1:]
                elif line.startswith("fl="):
                    fl = line[3:].strip()
                elif line.startswith("fn="):
                    fn = line[3:].strip()
                elif line[:1].isdigit() and fn:
                    w = line.split()
                    for k, e in enumerate(events):
                        if e in ev and ev.index(e) + 1 < len(w):
                            out[fn][k] += int(w[ev.index(e) + 1])
            return out
        events = ["Dr", "Dw", "D1mr", "D1mw"]
        ours, theirs = per_fn(cgf, events), per_fn(vgcg, events)
        names = {n for _, n, a, s, inst in fns if inst}
        compared = 0
        for n in sorted(names & set(ours) & set(theirs)):
            o, t = ours[n], theirs[n]
            compared += 1
            if o[:2] != t[:2]:
                fails.append(f"{n}: Dr, Dw {o[:2]}, cachegrind {t[:2]}")
        summary = [l.split()[1:] for l in open(cgf) if l.startswith("summary:")]
        l1 = meta.get("memtrace_cache_0_l1d", "").split(": ", 1)[-1].split()
        # (an access of code in no function, a PLT stub's, has no row)
        if not summary or len(l1) < 6 or \
                abs(int(summary[0][1]) + int(summary[0][3]) - int(l1[2]) - int(l1[5])) > 5:
            fails.append(f"cachegrind export: summary {summary} for L1D {l1}")
        print(f"memtrace: cachegrind export: {compared} functions of the program against cachegrind's")
        if compared < 5:
            fails.append(f"cachegrind export: only {compared} functions compared")
    records = int(meta.get("memtrace_accesses", 0))
    l1d = meta.get("memtrace_cache_0_l1d", "")
    words = l1d.split(": ", 1)[-1].split()
    try:
        simulated = int(words[1]) + int(words[4])
    except (IndexError, ValueError):
        simulated = -1
    print(f"memtrace: {records} accesses, L1D {l1d}")
    if simulated != records or records < sum(mine.values()):
        fails.append(f"cache meta {l1d!r} for {records} accesses")
    # --trace: the stream as a din trace, the same accesses by kind as the
    # run's own counts, and `reticle cachesim` reads all of it
    trace, tdb = os.path.join(work, "t.din"), os.path.join(work, "t.db")
    r = subprocess.run([reticle, "run", "-c", "memtrace", "--trace", trace, "-o", tdb, "--"] + prog,
                       capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != native.returncode or r.stdout != native.stdout or not os.path.exists(trace):
        fails.append(f"--trace: status {r.returncode}, output {r.stdout!r}\n{r.stderr[-1000:]}")
    else:
        kinds = collections.Counter(line[0] for line in open(trace))
        con = sqlite3.connect(tdb)
        sums = dict(con.execute("select name, sum(value) from metrics group by name"))
        want = {"r": int(sums.get("mem_loads", 0)), "w": int(sums.get("mem_stores", 0)),
                "m": int(sums.get("mem_modifies", 0))}
        print(f"memtrace: --trace: {dict(kinds)}, the profile's counts {want}")
        # (accesses of code in no function have no row: a few)
        if any(abs(kinds.get(k, 0) - want[k]) > 5 for k in want):
            fails.append(f"--trace: {dict(kinds)} in the trace, {want} in the profile")
        cs = subprocess.run([reticle, "cachesim", "--cache", "l1d=32k:8:64", trace], capture_output=True,
                            text=True)
        if cs.returncode != 0 or str(sum(kinds.values())) not in cs.stdout.replace(",", ""):
            fails.append(f"reticle cachesim of the trace: status {cs.returncode}: {cs.stdout[-500:]} {cs.stderr}")
    # --sample periodic:ON:OFF: the output as native, some of the accesses
    # simulated (a quarter of the instructions; the windows lie at random
    # offsets in their periods, and a rep stosq in one of them counts as
    # one instruction for thousands of accesses: a wide margin), and the
    # windows there are
    sdb = os.path.join(work, "s.db")
    r = subprocess.run([reticle, "run", "-c", "memtrace", "--sample", "periodic:5000:15000", "-o", sdb, "--"] +
                       prog, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != native.returncode or r.stdout != native.stdout:
        fails.append(f"--sample: status {r.returncode}, output {r.stdout!r}\n{r.stderr[-1000:]}")
    else:
        smeta = dict(sqlite3.connect(sdb).execute("select key, value from meta"))
        part, whole = int(smeta.get("memtrace_accesses", 0)), int(meta.get("memtrace_accesses", 1))
        print(f"memtrace: --sample periodic:5000:15000: {part} of {whole} accesses "
              f"({100 * part / whole:.1f}%), {smeta.get('memtrace_windows')} traced windows")
        if not 0.05 < part / whole < 0.75 or int(smeta.get("memtrace_windows", 0)) < 20:
            fails.append(f"--sample: {part} of {whole} accesses, {smeta.get('memtrace_windows')} windows")
    static_analysis(reticle, work, prog, path, mine, meta, fails)
    for f in fails:
        print("FAIL " + f)
    print(f"{len(fails)} failure(s)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
