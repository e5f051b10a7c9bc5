#!/usr/bin/env python3
"""examples/scripts/until_call.lua against callgrind: the Ir of the
program's computing functions (tests/run/programs/span.c) before the first
call of parse and of emit equal callgrind's --dump-before parts; a function
never called leaves the whole run counted, and says so.

usage: until_call_oracle.py RETICLE WORKDIR SCRIPT PROGRAM"""
import os, re, shutil, subprocess, sys

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


def callgrind_parts():
    out = os.path.join(work, "cg.out")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-before=parse",
                    "--dump-before=emit", prog, "phases"], capture_output=True, check=True, timeout=300)
    parts = []
    for f in (out + ".1", out + ".2", out):
        a = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", f],
                           capture_output=True, text=True, check=True).stdout
        ir = {}
        for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+[^:\s]+:(\S+) \[([^\]]+)\]", a, re.M):
            if os.path.realpath(m.group(3)) == prog and m.group(2) in COMPUTING:
                ir[m.group(2)] = ir.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
        parts.append(ir)
    return parts


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


before, between, after = callgrind_parts()
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
