#!/usr/bin/env python3
"""The loops collector against objdump and the exact edge and block counts:
a run of PROGRAM (non-PIE: the file's addresses) with -c loops,edges,bbcount.
objdump -d lists the program's back-edges (a jump or conditional branch to
an address at or before it in the same function); every one that ran has a
loop row and every loop row of the program is one of them; a conditional
back-edge's iterations equal the times edges says it jumped (edges is
checked against callgrind by run.jumps_exact), an unconditional one's the
executions of the block it ends (bbcount, checked against callgrind by
run.callgrind_exact). Then the text report lists the loops.

usage: loops_oracle.py RETICLE WORKDIR -- PROGRAM ARGS..."""
import os, re, shutil, sqlite3, subprocess, sys

reticle, work = sys.argv[1], sys.argv[2]
prog = sys.argv[sys.argv.index("--") + 1:]
exe = os.path.realpath(prog[0])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
fails = 0


def fail(msg):
    global fails
    fails += 1
    if fails <= 20:
        print("FAIL " + msg)


# objdump: back-edges of the program's own functions, and which are conditional
back, fn, insns = {}, None, []
for line in subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe], capture_output=True,
                           text=True).stdout.splitlines():
    m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
    if m:
        fn = m.group(2)
        continue
    m = re.match(r"^\s+([0-9a-f]+):\s", line)
    if m:
        insns.append(int(m.group(1), 16))
    m = re.match(r"^\s+([0-9a-f]+):\s+(j\w+|loop\w*)\s+([0-9a-f]+) <(.+?)(?:\+0x[0-9a-f]+)?>", line)
    if m and m.group(4) == fn and int(m.group(3), 16) <= int(m.group(1), 16):
        back[int(m.group(1), 16)] = m.group(2) != "jmp"
db = os.path.join(work, "p.db")
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
native = subprocess.run(prog, capture_output=True, timeout=300)
r = subprocess.run([reticle, "run", "-c", "loops,edges,bbcount", "-o", db, "--"] + prog, capture_output=True,
                   text=True, env=env, timeout=300)
if r.returncode != native.returncode:
    print(f"FAIL run: {r.returncode} {r.stderr}")
    sys.exit(1)
con = sqlite3.connect(db)
own = "SELECT f.id FROM functions f JOIN modules m ON m.id = f.module WHERE m.path = ?"
loops = {site: v for site, v in con.execute(
    f"SELECT site, value FROM metrics WHERE name = 'loop_iterations' AND function IN ({own})", (exe,))}
taken = {site: t for site, t in con.execute(f"SELECT site, taken FROM branches WHERE function IN ({own})", (exe,))}
# executed blocks by their last instruction (objdump's instructions, counted)
index = {a: k for k, a in enumerate(insns)}
ends = {}
for addr, n, count in con.execute(f"SELECT addr, ninstrs, count FROM blocks WHERE function IN ({own})", (exe,)):
    if addr in index and index[addr] + n - 1 < len(insns):
        ends[insns[index[addr] + n - 1]] = count
ran = 0
for site, cond in sorted(back.items()):
    if cond:
        want = taken.get(site, 0)
    else:   # the executions of the block the jump ends
        want = ends.get(site, 0)
    got = loops.get(site, 0)
    if got != want:
        fail(f"back-edge {site:#x} ({'conditional' if cond else 'jmp'}): {got} iterations, want {want}")
    ran += want > 0
extra = [s for s in loops if s not in back]
if extra:
    fail(f"loop rows that objdump has no back-edge for: {[hex(s) for s in extra[:5]]}")
if ran < 3:
    fail(f"only {ran} back-edges ran: too few to compare")
rep = subprocess.run([reticle, "report", db], capture_output=True, text=True).stdout
if "\nloops (iterations" not in rep or "loop_iterations" in rep:
    fail("the text report has no loops table (or lists the metric as such)")
print(f"{len(back)} back-edges in the program, {ran} ran, {len(loops)} loop rows")
print(f"{fails} failures")
sys.exit(1 if fails else 0)
