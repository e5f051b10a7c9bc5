#!/usr/bin/env python3
"""Checks reticle's edges collector against valgrind callgrind's exact
per-instruction execution counts (--dump-instr=yes) for the same program:
for every conditional branch of the main executable, taken + not-taken must
equal callgrind's executions of the branch, and not-taken its executions of
the next instruction wherever nothing else leads there (no direct branch
targets it, no indirect jump in the function, not a rep instruction, whose
Ir counts iterations). callgrind's own jcnd= lines are not the oracle: they
miss executions (fib's 'jle' shows 28656 of its 28657). Cold (empty
warm-start cache) and warm.

usage: edges_oracle.py RETICLE WORKDIR [--only NAME,NAME...] -- PROGRAM ARGS...
--only limits the check to those functions of the program."""
import os, re, shutil, sqlite3, subprocess, sys
import verify_copies
from callgrind_oracle import function_ranges, load_bias, parse_callgrind


def executions(cg_out, exe):
    """{run-time address: executions (Ir)} of EXE's instructions, and the
    run-time addresses of main's (for the bias)."""
    out, main_addrs = {}, []
    for (ob, fn), v in parse_callgrind(cg_out).items():
        if not ob or os.path.realpath(ob) != exe:
            continue
        for a, ir in v["instr"].items():
            out[a] = out.get(a, 0) + ir
        if re.sub(r"'\d+$", "", fn) == "main":
            main_addrs.extend(v["instr"])
    return out, main_addrs


def disassembly(exe):
    """[(addr, next_addr, mnemonic, target or None, function)] from objdump."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe], capture_output=True,
                          text=True, check=True).stdout
    insns, fn = [], None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            fn = m.group(1)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(\S*)", line)
        if not m or fn is None:
            continue
        addr, mnem, op = int(m.group(1), 16), m.group(2), m.group(3)
        if mnem in ("bnd", "notrack") and op:
            mnem = op
        t = re.match(r"^([0-9a-f]+)$", op)
        insns.append([addr, None, mnem, int(t.group(1), 16) if t else None, fn])
    for i in range(len(insns) - 1):
        insns[i][1] = insns[i + 1][0]
    return [tuple(x) for x in insns if x[1] is not None]


def expected(exe, execs, bias, only):
    """{link-time site: (executions, not-taken or None)} for the executed
    conditional branches of EXE, and the addresses of the functions callgrind
    never saw run (_init: valgrind does not count it)."""
    insns = disassembly(exe)
    targets = {t for a, n, m, t, f in insns if t is not None}
    indirect = {f for a, n, m, t, f in insns if m.startswith(("jmp", "notrack")) and t is None}
    by_addr = {a: (n, m) for a, n, m, t, f in insns}
    seen = {f for a, n, m, t, f in insns if execs.get(a + bias, 0)}
    unseen = {a for a, n, m, t, f in insns if f not in seen or (only and f not in only)}
    out = {}
    for a, n, m, t, f in insns:
        cond = (m.startswith("j") and not m.startswith("jmp")) or m.startswith("loop")
        if not cond or execs.get(a + bias, 0) == 0 or (only and f not in only):
            continue
        nxt = by_addr.get(n, (None, ""))[1]
        plain = n not in targets and f not in indirect and not nxt.startswith("rep")
        out[a] = (execs[a + bias], execs.get(n + bias, 0) if plain else None)
    return out, unseen


def reticle_branches(db, exe):
    """{link-time site: (taken, not_taken)} of EXE in profile DB."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT m.path, b.site, b.taken, b.not_taken FROM branches b"
                       " JOIN functions f ON f.id = b.function JOIN modules m ON m.id = f.module")
    out = {}
    for path, site, taken, not_taken in rows:
        if os.path.realpath(path) == exe:
            t, n = out.get(site, (0, 0))
            out[site] = (t + taken, n + not_taken)
    con.close()
    return out


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    opts = sys.argv[:sys.argv.index("--")]
    only = set(opts[opts.index("--only") + 1].split(",")) if "--only" in opts else None
    exe = os.path.realpath(prog[0])
    os.makedirs(work, exist_ok=True)
    cg_out = os.path.join(work, "callgrind-instr.out")
    native = subprocess.run(prog, capture_output=True)
    subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--skip-plt=no",
                    "--callgrind-out-file=" + cg_out] + prog, capture_output=True)
    execs, main_addrs = executions(cg_out, exe)
    main_start = next(r[0] for r in function_ranges(exe) if r[2] == "main")
    theirs, unseen = expected(exe, execs, load_bias(main_addrs, main_start), only)
    if not theirs:
        print("FAIL: callgrind saw no conditional branch run in the program")
        return 1
    ok = True
    cache = os.path.join(work, "cache-edges")
    shutil.rmtree(cache, ignore_errors=True)
    for tag in ("cold", "warm"):
        env = dict(os.environ, RETICLE_CACHE_DIR=cache, **verify_copies.ENV)
        db = os.path.join(work, f"edges-{tag}.db")
        rt = subprocess.run([reticle, "run", "-c", "edges,bbcount", "-o", db, "--"] + prog,
                            capture_output=True, env=env)
        if rt.returncode != native.returncode or rt.stdout != native.stdout:
            print(f"FAIL [{tag}]: output or exit status differs from native")
            ok = False
            continue
        why = verify_copies.problem(rt.stderr.decode(errors="replace"), tag == "warm")
        if why:
            print(f"FAIL [{tag}]: {why}")
            ok = False
        mine = reticle_branches(db, exe)
        bad = checked = 0
        for site, (e, nt) in sorted(theirs.items()):
            t, n = mine.get(site, (0, 0))
            checked += nt is not None
            if t + n != e or (nt is not None and n != nt):
                bad += 1
                want = f"{e} executions" + (f", {nt} not taken" if nt is not None else "")
                print(f"FAIL [{tag}]: branch {site:#x}: callgrind {want}; reticle {t} taken, {n} not")
        for site, (t, n) in sorted(mine.items()):
            if site not in theirs and site not in unseen:
                bad += 1
                print(f"FAIL [{tag}]: branch {site:#x}: reticle {t}/{t + n}, callgrind saw it not run")
        print(f"{'ok  ' if not bad else 'FAIL'} [{tag}]: {len(theirs)} branches run, "
              f"{checked} with not-taken counts checked, {len(mine)} counted by reticle, {bad} differ")
        ok = ok and not bad
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
