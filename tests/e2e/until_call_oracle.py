#!/usr/bin/env python3
"""examples/scripts/until_call.lua against callgrind: the Ir of the
program's computing functions (tests/run/programs/span.c) before the first
call of parse and of emit equal callgrind's --dump-before parts; a function
never called leaves the whole run counted, and says so.

usage: until_call_oracle.py RETICLE WORKDIR SCRIPT PROGRAM"""
import os, re, shutil, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run"))
from callgrind_parts import callgrind_parts

reticle, work, script, prog = sys.argv[1:5]
prog = os.path.realpath(prog)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
if not shutil.which("valgrind"):
    print("skip: no valgrind")
    sys.exit(77)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), TMPDIR=work)
COMPUTING = {"work", "phase_a", "phase_b"}
fails = 0


def script_rows(function):
    r = subprocess.run([reticle, "script", script, function, "0", "--", prog, "phases"],
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        return None, r
    rows = {}
    name = os.path.basename(prog)
    for m in re.finditer(r"^\s*(\d+)\s+(\d+)\s+(\S+) \((\S+)\)$", r.stdout, re.M):
        if m.group(4) == name and m.group(3) in COMPUTING:
            rows[m.group(3)] = int(m.group(1))
    return rows, r


before, between, after = callgrind_parts(prog, ["phases"], work, ["parse", "emit"], COMPUTING)
whole = {k: before.get(k, 0) + between.get(k, 0) + after.get(k, 0) for k in COMPUTING}
until_emit = {k: before.get(k, 0) + between.get(k, 0) for k in COMPUTING}
for function, want, never in [("parse", before, False), ("emit", until_emit, False), ("no_such", whole, True)]:
    want = {k: v for k, v in want.items() if v}
    rows, r = script_rows(function)
    if rows is None:
        fails += 1
        print(f"FAIL {function}: exit {r.returncode}: {r.stderr.strip()}")
        continue
    said_never = "never called" in r.stdout
    if rows != want or said_never != never or "parse\nemit\n" not in r.stdout:
        fails += 1
        print(f"FAIL until {function}: {rows}, callgrind {want}; says never called: {said_never}\n{r.stdout}")
    else:
        print(f"ok   until {function}: {sum(rows.values())} Ir in the program's functions, as callgrind")
r = subprocess.run([reticle, "script", script, "emit"], capture_output=True, text=True, timeout=60, env=env)
if r.returncode != 1 or "usage" not in r.stderr:
    fails += 1
    print(f"FAIL without a program: exit {r.returncode} {r.stderr.strip()}")
print(f"{'FAILED' if fails else 'passed'}: {fails} failures")
sys.exit(1 if fails else 0)
