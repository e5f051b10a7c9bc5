#!/usr/bin/env python3
"""Function names as valgrind prints them: every function of the program
that reticle's callgrind export names (with a count) has a function of the
same name in callgrind's own output for the same program. Rust's names are
the test's point: valgrind and perf print them without the legacy hash
('m::main', not 'm::main::h4009bc0cd8b193aa') and without v0's crate
disambiguators ('alloc::fmt::format::format_inner').

usage: names_oracle.py RETICLE WORKDIR -- PROGRAM ARGS...
The last line counts passes and failures."""
import os, re, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_oracle import parse_callgrind

reticle, work = sys.argv[1], sys.argv[2]
prog = sys.argv[sys.argv.index("--") + 1:]
exe = os.path.realpath(prog[0])
os.makedirs(work, exist_ok=True)
theirs_out, db, mine_out = (os.path.join(work, n) for n in ("callgrind.out", "p.db", "reticle.cg"))
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--callgrind-out-file=" + theirs_out] + prog,
               capture_output=True, check=True)
subprocess.run([reticle, "run", "-c", "fcount", "-o", db, "--"] + prog, capture_output=True, check=True, env=env)
subprocess.run([reticle, "report", "--format", "callgrind", "-o", mine_out, db], check=True, env=env)


def by_address(path):
    """{entry address: name} of the executable's functions in a callgrind
    file (instr positions): a function's lowest address with a cost line
    (callgrind's recursion levels, fib'2, are fib)."""
    out = {}
    for (ob, fn), v in parse_callgrind(path).items():
        if ob and os.path.realpath(ob) == exe and v["instr"]:
            out[min(v["instr"])] = re.sub(r"'\d+$", "", fn)
    return out


theirs, mine = by_address(theirs_out), by_address(mine_out)
# callgrind's addresses are run-time ones, reticle's the file's: main gives the bias
main_theirs = [a for a, n in theirs.items() if n == "main"]
main_mine = [a for a, n in mine.items() if n == "main"]
if not main_theirs or not main_mine:
    print("FAIL: no main in one of the two outputs")
    print("0 passed, 1 failed")
    sys.exit(1)
bias = main_theirs[0] - main_mine[0]
compared, wrong = 0, []
for addr, name in sorted(mine.items()):
    their = theirs.get(addr + bias)
    # callgrind names code without a symbol it reads (crt's) by address
    if their is None or their.startswith("0x") or their == "(below main)":
        continue
    compared += 1
    if their != name:
        wrong.append((name, their))
for name, their in wrong[:20]:
    print(f"FAIL: reticle names {name!r} what callgrind names {their!r}")
print(f"{compared - len(wrong)} of {compared} functions named as callgrind names them")
ok = compared >= 5 and not wrong
print(f"{1 if ok else 0} passed, {0 if ok else 1} failed")
sys.exit(0 if ok else 1)
