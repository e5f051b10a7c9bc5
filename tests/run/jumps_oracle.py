#!/usr/bin/env python3
"""Checks the jump= and jcnd= lines of reticle's callgrind export
(`reticle run -c edges,bbcount`, `reticle report --format callgrind`)
against valgrind callgrind's own (--collect-jumps=yes) for the same
program: for every function of the main executable, the same jumps (site,
target), each with the same count (jump=) or the same times jumped of
times run (jcnd=). Cold and warm.

Keys are (site, target): callgrind names some functions by address. The
times a conditional branch ran are compared with callgrind's executions of
the instruction (its Ir, which run.edges_exact checks), not with its jcnd
total, which misses executions (fib's 'jle' shows 4180 of 4181); the times
it jumped with its Ir less the Ir of the next instruction where only the
fall-through leads there, as callgrind's own count can be short there too
(644 of a loop's 700 back-jumps), and with callgrind's jcnd elsewhere. Not
compared, and counted apart: the targets of indirect jumps (reticle does
not count them apart yet), callgrind's jcnd of a rep string instruction to
itself (one per iteration), jumps of functions callgrind never saw run
(_init), and jumps of code callgrind has no symbol for (it names the
function by address; it cannot tell a tail call there from a jump).

usage: jumps_oracle.py RETICLE WORKDIR [--only NAME,NAME...] -- PROGRAM ARGS...
--only limits the check to the jumps of those functions of the program."""
import os, re, shutil, subprocess, sys
from callgrind_oracle import function_ranges
from edges_oracle import disassembly, executions


def parse_jumps(path):
    """{(object, function): {(site, target): (kind, taken, executed)}} of a
    callgrind file with absolute positions (first position: the address)."""
    names = {"ob": {}, "fn": {}}
    cur = {"ob": None, "fn": None}
    out, pending = {}, None

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", text)
        if not m:
            return text
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), text)

    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = re.match(r"^(ob|fn|cob|cfn)=(.*)$", line)
            if m:
                kind = m.group(1)[-2:]
                v = name(kind, m.group(2))
                if m.group(1) in cur:
                    cur[m.group(1)] = v
                continue
            m = re.match(r"^jump=(\d+) (\S+)", line)
            if m:
                pending = ("jump", int(m.group(1)), int(m.group(1)), int(m.group(2), 16))
                continue
            m = re.match(r"^jcnd=(\d+)/(\d+) (\S+)", line)
            if m:
                pending = ("jcnd", int(m.group(1)), int(m.group(2)), int(m.group(3), 16))
                continue
            if pending and line[:2] == "0x":
                kind, taken, execs, target = pending
                site = int(line.split()[0], 16)
                key = (cur["ob"], re.sub(r"'\d+$", "", cur["fn"]))
                d = out.setdefault(key, {})
                k0, t0, e0 = d.get((site, target), (kind, 0, 0))
                d[(site, target)] = (kind, t0 + taken, e0 + execs)
            pending = None
    return out


def of_exe(jumps, exe):
    """{(function, site, target): (kind, taken, executed)} of EXE."""
    out = {}
    for (ob, fn), d in jumps.items():
        if ob and os.path.realpath(ob) == exe:
            for (site, target), v in d.items():
                out[(fn, site, target)] = v
    return out


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    opts = sys.argv[:sys.argv.index("--")]
    only = set(opts[opts.index("--only") + 1].split(",")) if "--only" in opts else None
    exe = os.path.realpath(prog[0])
    os.makedirs(work, exist_ok=True)
    cg_out = os.path.join(work, "callgrind-jumps.out")
    native = subprocess.run(prog, capture_output=True)
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-jumps=yes", "--dump-instr=yes",
                    "--compress-pos=no", "--skip-plt=no", "--callgrind-out-file=" + cg_out] + prog,
                   capture_output=True)
    # callgrind writes link-time addresses of the executable (offsets in
    # its object): checked against main's
    main_start = next(r[0] for r in function_ranges(exe) if r[2] == "main")
    executed = executions(cg_out, exe)[0]
    if main_start not in executed:
        print(f"FAIL: callgrind's addresses are not link-time ones (main {main_start:#x} not run)")
        return 1
    dis = disassembly(exe)
    insns = {a: (m, t) for a, n, m, t, f in dis}
    fn_of = {a: f for a, n, m, t, f in dis}
    targets = {t for a, n, m, t, f in dis if t is not None}
    parsed = of_exe(parse_jumps(cg_out), exe)
    # where the run's indirect jumps went (a jump table's cases; not a
    # virtual tail call's callee, which is no reason to doubt the rest of
    # its function)
    targets |= {target for (fn, site, target) in parsed
                if insns.get(site, ("", 0))[0].startswith("jmp") and insns.get(site, ("", 0))[1] is None}
    # the executions that jumped, from Ir, where only falling through leads
    # to the next instruction
    jumped = {a: executed.get(a, 0) - executed.get(n, 0) for a, n, m, t, f in dis
              if n not in targets and not insns.get(n, ("",))[0].startswith("rep")}
    theirs, skipped = {}, {"indirect-jump targets": 0, "rep loops": 0, "without symbols": 0}
    unnamed = set()
    for (fn, site, target), (kind, taken, total) in parsed.items():
        mnem, direct = insns.get(site, ("", None))
        if only and fn_of.get(site) not in only:
            unnamed.add(site)
        elif re.match(r"^0x[0-9a-f]+$", fn):
            skipped["without symbols"] += 1
            unnamed.add(site)
        elif mnem.startswith("jmp") and direct is None:
            skipped["indirect-jump targets"] += 1
        elif site == target and mnem.startswith("rep"):
            skipped["rep loops"] += 1
        else:
            if kind == "jcnd":
                theirs[(site, target)] = (kind, jumped.get(site, taken), executed.get(site, 0))
            else:
                theirs[(site, target)] = (kind, taken, taken)
    if not theirs:
        print("FAIL: callgrind recorded no jump in the program")
        return 1
    ok = True
    cache = os.path.join(work, "cache-jumps")
    shutil.rmtree(cache, ignore_errors=True)
    for tag in ("cold", "warm"):
        env = dict(os.environ, RETICLE_CACHE_DIR=cache)
        db = os.path.join(work, f"jumps-{tag}.db")
        cg = os.path.join(work, f"jumps-{tag}.callgrind")
        rt = subprocess.run([reticle, "run", "-c", "edges,bbcount", "-o", db, "--"] + prog,
                            capture_output=True, env=env)
        if rt.returncode != native.returncode or rt.stdout != native.stdout:
            print(f"FAIL [{tag}]: output or exit status differs from native")
            ok = False
            continue
        rep = subprocess.run([reticle, "report", "-f", "callgrind", "-o", cg, db], capture_output=True, text=True)
        if rep.returncode:
            print(f"FAIL [{tag}]: report: {rep.stderr.strip()}")
            ok = False
            continue
        mine = {(s, t): v for (fn, s, t), v in of_exe(parse_jumps(cg), exe).items()
                if executed.get(s) and s not in unnamed and (not only or fn_of.get(s) in only)}   # callgrind does not see _init run
        bad = 0
        for k in sorted(set(theirs) | set(mine)):
            if theirs.get(k) != mine.get(k):
                bad += 1
                if bad <= 15:
                    print(f"FAIL [{tag}]: {k[0]:#x} -> {k[1]:#x}: callgrind {theirs.get(k)}, "
                          f"reticle {mine.get(k)}")
        jc = sum(1 for v in theirs.values() if v[0] == "jcnd")
        print(f"{'ok  ' if not bad else 'FAIL'} [{tag}]: callgrind {len(theirs)} jumps ({jc} jcnd), "
              f"reticle {len(mine)}, {bad} differ; not compared: "
              + ", ".join(f"{n} {what}" for what, n in skipped.items()))
        ok = ok and not bad
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
