#!/usr/bin/env python3
"""memtrace --sample with untraced twins: outside its traced windows a
thread runs copies without records (isa/x86_64/memtrace.h), switching at
the window's end, at entries and where calls return. The oracle is the
same run without twins (RETICLE_MEMTRACE_TWINS=0: every record written,
those of untraced windows dropped), which traces by construction exactly
the windows' instructions: with address randomization off (setarch -R) both
must give the same accesses per instruction and kind, the same windows,
and the same misses and estimates (a load from a jump table the copy or
its twin has its own copy of is recorded at the program's table), for
several window shapes, on a
program with loops with and without calls, a jump table, recursion and a
call through a pointer, and on an interpreter with computed gotos. The
twins must exist (memtrace_twins). Then C++ exceptions thrown from twins'
frames (their own unwind entries), signals landing in them, and backtrace()
through them: output and status as native. With --warmup as long as the
longest gap, the counts are the full run's.

usage: memtrace_twins.py RETICLE WORKDIR TWINS INTERP EXCEPTIONS ASYNC_SIGNALS BACKTRACE_THROW"""
import os, shutil, sqlite3, subprocess, sys

WINDOWS = ["1000:3000", "777:10001", "20000:5000"]


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, env=env, timeout=600)


def profile(db):
    c = sqlite3.connect(db)
    meta = dict(c.execute("select key, value from meta where key like 'memtrace%'"))
    metrics = sorted(c.execute("select f.name, m.name, m.site, m.value from metrics m join functions f "
                               "on f.id = m.function where m.name in ('mem_loads', 'mem_stores', "
                               "'mem_modifies', 'mem_untraced_instructions')"))
    c.close()
    return meta, metrics


def main():
    reticle, work, twins_prog, interp, exceptions, signals, bt_throw = sys.argv[1:8]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    setarch = shutil.which("setarch")
    if not setarch:
        print("SKIP: no setarch (util-linux) to turn address randomization off")
        sys.exit(77)
    fails = []
    for prog in ([twins_prog, "600"], [interp]):
        native = run([setarch, "-R"] + prog)
        for win in WINDOWS:
            got = {}
            for twins in ("1", "0"):
                env = dict(os.environ, RETICLE_MEMTRACE_TWINS=twins)
                db = os.path.join(work, f"{os.path.basename(prog[0])}-{win}-{twins}.db")
                r = run([setarch, "-R", reticle, "run", "-c", "memtrace", "--sample", f"periodic:{win}",
                         "-o", db, "--"] + prog, env)
                if r.returncode != native.returncode or r.stdout != native.stdout:
                    fails.append(f"{prog[0]} periodic:{win} twins={twins}: status {r.returncode}, "
                                 f"output {'same' if r.stdout == native.stdout else 'differs'}\n"
                                 f"{r.stderr.decode(errors='replace')[-1500:]}")
                    continue
                got[twins] = profile(db)
            if len(got) < 2:
                continue
            (m1, x1), (m0, x0) = got["1"], got["0"]
            what = f"{os.path.basename(prog[0])} periodic:{win}"
            if int(m1.get("memtrace_twins", 0)) <= 0 or int(m0.get("memtrace_twins", -1)) != 0:
                fails.append(f"{what}: twins {m1.get('memtrace_twins')} (with), {m0.get('memtrace_twins')} (without)")
            for key in sorted(set(m1) | set(m0)):
                a, b = m1.get(key, ""), m0.get(key, "")
                # (which functions got copies, and so the accesses numbered, may
                # differ with timing: not a result)
                if key not in ("memtrace_twins", "memtrace_points_untraced", "memtrace_instrumented") and a != b:
                    fails.append(f"{what}: {key}: {a!r} with twins, {b!r} without")
            if x1 != x0:
                diff = [(a, b) for a, b in zip(x1, x0) if a != b][:5]
                fails.append(f"{what}: per-instruction counts differ ({len(x1)} and {len(x0)} rows): {diff}")
            print(f"{what}: {m1['memtrace_accesses']} accesses in {m1['memtrace_windows']} windows, "
                  f"{m1['memtrace_twins']} twins, {len(x1)} per-instruction counts: "
                  f"{'same' if x1 == x0 and m1['memtrace_accesses'] == m0['memtrace_accesses'] else 'DIFFERENT'}")
    # --warmup: a warm-up as long as the longest gap (twice OFF: the
    # windows lie at random offsets in their periods) traces everything
    # into the caches, so the counts are the full run's, exactly (loads
    # from the copies' and the twins' own jump tables are recorded at the
    # program's tables); the estimate, from the windows alone, comes with
    # its interval
    for prog in ([twins_prog, "600"], [interp]):
        full, warm = (os.path.join(work, f"{os.path.basename(prog[0])}-{k}.db") for k in ("full", "warm"))
        r1 = run([reticle, "run", "-c", "memtrace", "-o", full, "--"] + prog)
        r2 = run([reticle, "run", "-c", "memtrace", "--sample", "periodic:1000:3000", "--warmup", "6000",
                  "-o", warm, "--"] + prog)
        if r1.returncode or r2.returncode:
            fails.append(f"{prog[0]} --warmup: status {r1.returncode}, {r2.returncode}\n{r2.stderr[-500:]}")
            continue
        (mf, _), (mw, _) = profile(full), profile(warm)
        for key in sorted(k for k in mf if k.startswith("memtrace_cache_")):
            wa, wb = mw.get(key, "").split(": ", 1)[-1].split(), mf[key].split(": ", 1)[-1].split()
            if len(wa) != 6 or wa != wb:
                fails.append(f"{prog[0]} --warmup: {key}: {mw.get(key)!r}, full run {mf[key]!r}")
        est = mw.get("memtrace_estimate_0_l1d", "")
        if "95% confidence" not in est:
            fails.append(f"{prog[0]} --warmup: estimate {est!r}")
        print(f"{os.path.basename(prog[0])} periodic:1000:3000 --warmup 6000: counts as the full run's; "
              f"L1D estimate {est}")
    # --warmup-lower: the lower levels' warm-up, then the exact one, as
    # long as the longest gap between them: every access is traced once
    # (counted in memtrace_accesses), into the caches or the window
    for prog in ([twins_prog, "600"], [interp]):
        full, low = (os.path.join(work, f"{os.path.basename(prog[0])}-{k}.db") for k in ("full", "lower"))
        r = run([reticle, "run", "-c", "memtrace", "--cache", "l1d=8k:2:64,l2=64k:8:64", "--sample",
                 "periodic:1000:3000", "--warmup", "700", "--warmup-lower", "5300", "-o", low, "--"] + prog)
        (mf, _), (ml, _) = profile(full), profile(low)
        est = ml.get("memtrace_estimate_0_l2", "")
        print(f"{os.path.basename(prog[0])} periodic:1000:3000 --warmup 700 --warmup-lower 5300: "
              f"{ml.get('memtrace_accesses')} accesses traced, full run {mf.get('memtrace_accesses')}; L2 estimate {est}")
        if r.returncode or ml.get("memtrace_accesses") != mf.get("memtrace_accesses") or \
           "95% confidence" not in est or not ml.get("memtrace_warmup", "").startswith("700 instructions"):
            fails.append(f"{prog[0]} --warmup-lower: status {r.returncode}, {ml}\n{r.stderr[-500:]}")
    # (windows of a few hundred instructions under a 50 us timer signal
    # spend minutes in traps: the signals' program gets wider ones)
    for prog, wins in ((exceptions, ("300:700", "5000:5000")), (signals, ("2000:8000", "5000:5000")),
                       (bt_throw, ("300:700", "5000:5000"))):
        native = run([prog])
        for win in wins:
            r = run([reticle, "run", "-c", "memtrace", "--sample", f"periodic:{win}",
                     "-o", os.path.join(work, "x.db"), "--", prog])
            ok = r.returncode == native.returncode and r.stdout == native.stdout
            print(f"{os.path.basename(prog)} periodic:{win}: status {r.returncode}, output "
                  f"{'as native' if ok else 'DIFFERENT'}")
            if not ok:
                fails.append(f"{prog} periodic:{win}: status {r.returncode} (native {native.returncode})\n"
                             f"{r.stderr.decode(errors='replace')[-1500:]}")
    for f in fails:
        print("FAIL " + f)
    print(f"{len(fails)} failure(s)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
