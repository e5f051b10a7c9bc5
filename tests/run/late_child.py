#!/usr/bin/env python3
"""A child ending just after the program: reticle lets a process the
program left running go after a second of grace, but that second is the
child's, not the time reticle spends writing the program's profile (a
calltime profile of a million call paths: seconds). The child (tests/run/
programs/late_child.c, ending 0.3 s after its parent) must end by itself
under reticle: stdout and status as natively (the oracle), no word of a
process let go, and in the profile the child exited 0 and its last
function was timed. Under memtrace (processes waited for, not let go)
reticle says nothing of a child that ends within the grace.

usage: late_child.py RETICLE WORKDIR PROGRAM"""
import os, sqlite3, subprocess, sys
from checks import Checks

reticle, work, prog = sys.argv[1:4]
t = Checks(work)
env, fail = t.env, t.fail


native = subprocess.run([prog], capture_output=True, text=True, timeout=120)
for run in ("cold", "warm"):
    db = os.path.join(work, f"{run}.db")
    r = subprocess.run([reticle, "run", "-c", "calltime", "-o", db, "--", prog],
                       capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != native.returncode or r.stdout != native.stdout:
        fail(f"{run}: exit {r.returncode} (native {native.returncode}), stdout {r.stdout!r} "
             f"(native {native.stdout!r})")
    if "let go" in r.stderr or "still runs" in r.stderr:
        fail(f"{run}: the child was let go: {r.stderr.strip()}")
    con = sqlite3.connect(db)
    statuses = [s for (s,) in con.execute("SELECT exit_status FROM processes ORDER BY id")]
    if statuses != [0, 0]:
        fail(f"{run}: processes' exit statuses {statuses}, not [0, 0] (-2: still running)")
    # child_end ran once, in the child, and returned before its exit
    rows = con.execute("SELECT m.process, t.calls FROM function_times t JOIN functions f ON"
                       " f.id = t.function JOIN modules m ON m.id = f.module"
                       " WHERE f.name = 'child_end'").fetchall()
    if rows != [(2, 1)]:
        fail(f"{run}: child_end timed as {rows}, not once in image 2")
    print(f"{run}: statuses {statuses}, child_end {rows}")

# memtrace's copies trap into reticle: such processes are waited for, not
# let go, and reticle says so, but not of one that ends within the grace
# as the child does (it did at once, for every multiprocessing program)
native = subprocess.run([prog, "4"], capture_output=True, text=True, timeout=120)
db = os.path.join(work, "memtrace.db")
r = subprocess.run([reticle, "run", "-c", "memtrace", "-o", db, "--", prog, "4"],
                   capture_output=True, text=True, env=env, timeout=300)
if r.returncode != native.returncode or r.stdout != native.stdout:
    fail(f"memtrace: exit {r.returncode} (native {native.returncode}), stdout {r.stdout!r}")
if "waiting for" in r.stderr or "let go" in r.stderr:
    fail(f"memtrace: a word of the child, which ends in its grace: {r.stderr.strip()}")
statuses = [s for (s,) in sqlite3.connect(db).execute("SELECT exit_status FROM processes ORDER BY id")]
if statuses != [0, 0]:
    fail(f"memtrace: processes' exit statuses {statuses}, not [0, 0]")

t.done()
