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
from callgrind_oracle import load_bias, parse_callgrind

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
# callgrind's addresses are run-time ones, reticle's the file's: main gives
# the bias (callgrind charges main.cold, which g++ -O2 puts before main, to
# main: its entry is the address a whole number of pages away)
main_theirs = [a for (ob, fn), v in parse_callgrind(theirs_out).items()
               if fn == "main" and ob and os.path.realpath(ob) == exe for a in v["instr"]]
main_mine = [a for a, n in mine.items() if n == "main"]
if not main_theirs or not main_mine:
    print("FAIL: no main in one of the two outputs")
    print("0 passed, 1 failed")
    sys.exit(1)
bias = load_bias(main_theirs, main_mine[0])
compared, wrong = 0, []
for addr, name in sorted(mine.items()):
    their = theirs.get(addr + bias)
    # callgrind names code without a symbol it reads (crt's) by address
    if their is None or their.startswith("0x") or their == "(below main)":
        continue
    # a part split from its function (f.cold) is charged to the function
    # it was entered from, under that one's name
    if re.sub(r"\.(cold|part)(\.\d+)*$", "", name) == their and name != their:
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
