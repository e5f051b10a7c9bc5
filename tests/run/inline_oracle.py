#!/usr/bin/env python3
"""reticle report --inline against addr2line -i: a bbcount run of PROGRAM
(a non-PIE build: callgrind's addresses are the file's), valgrind's
callgrind with --dump-instr=yes on the same program gives each executed
instruction of PROGRAM's own module its Ir; addr2line -f -i names the
innermost function DWARF places each one in. The Ir of the instructions
inside an inlined call, summed per innermost function, must equal the
rows of `reticle report --inline` for the module, function by function.

usage: inline_oracle.py RETICLE WORKDIR -- PROGRAM ARGS..."""
import os, re, shutil, subprocess, sys
from collections import defaultdict

reticle, work = sys.argv[1], sys.argv[2]
prog = sys.argv[sys.argv.index("--") + 1:]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
exe = os.path.realpath(prog[0])
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


db = os.path.join(work, "p.db")
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
r = subprocess.run([reticle, "run", "-c", "bbcount", "-o", db, "--"] + prog, capture_output=True, text=True,
                   env=env, timeout=300)
if r.returncode:
    print(f"FAIL reticle run: {r.returncode} {r.stderr}")
    sys.exit(1)
rep = subprocess.run([reticle, "report", "--inline", "--top", "0", "--no-demangle", db],
                     capture_output=True, text=True)
ours = {}
section = False
for line in rep.stdout.splitlines():
    if line.startswith("inlined code"):
        section = True
        continue
    m = re.match(r"\s*(\d+)\s+[\d.]+%\s+(\S+) \((\S+)\) <- ", line) if section else None
    if m and m.group(3) == os.path.basename(exe):
        ours[m.group(2)] = int(m.group(1))

# callgrind: self Ir per instruction of the program's own object
out = os.path.join(work, "cg.out")
subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--skip-plt=no", "--compress-strings=no",
                "--compress-pos=no", "--callgrind-out-file=" + out] + prog,
               capture_output=True, check=True, timeout=600)
ir = defaultdict(int)
ob, skip, npos = None, False, 1
for line in open(out, errors="replace"):
    if line.startswith("positions:"):
        npos = len(line.split()) - 1     # instr, and line unless --dump-line=no
    elif line.startswith("ob="):
        ob = os.path.realpath(line[3:].strip())
    elif line.startswith("calls="):
        skip = True          # the next cost line is the call's inclusive cost
    elif line[:2] == "0x":
        if skip:
            skip = False
            continue
        if ob == exe:
            w = line.split()
            ir[int(w[0], 16)] += int(w[npos]) if len(w) > npos else 0
addrs = sorted(a for a in ir if ir[a])
a2l = subprocess.run(["addr2line", "-f", "-i", "-a", "-e", exe], input="".join(f"{a:#x}\n" for a in addrs),
                     capture_output=True, text=True, check=True).stdout.splitlines()
# output: per address its line "0x...", then (function, file:line) pairs, innermost first
theirs = defaultdict(int)
i = 0
while i < len(a2l):
    addr = int(a2l[i], 16)
    j = i + 1
    while j < len(a2l) and not a2l[j].startswith("0x"):
        j += 1
    pairs = (j - i - 1) // 2
    if pairs > 1:
        theirs[a2l[i + 1]] += ir[addr]
    i = j
for name in sorted(set(ours) | set(theirs)):
    if ours.get(name) != theirs.get(name):
        fail(f"{name}: reticle {ours.get(name)} Ir inlined, addr2line and callgrind {theirs.get(name)}")
print(f"{len(theirs)} inlined functions compared, {sum(theirs.values())} Ir")
if len(theirs) < 2:
    fail("too few inlined functions to compare")
print(f"{fails} failures")
sys.exit(1 if fails else 0)
