#!/usr/bin/env python3
"""reticle diff against the two profiles read directly (sqlite3): two runs
of PROGRAM with different arguments; every row's counts in A and in B are
the functions' own (functions matched by module file name and name), B - A
and B/A follow, rows come by the size of the difference, and every function
counted in either profile has a row. Then bad input: a missing profile, one
argument, two profiles with no count in common.

usage: diff_oracle.py RETICLE WORKDIR PROGRAM ARG_A ARG_B"""
import os, re, shutil, sqlite3, subprocess, sys
from collections import defaultdict
from itertools import zip_longest

reticle, work, prog, arg_a, arg_b = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def run(coll, out, arg):
    r = subprocess.run([reticle, "run", "-c", coll, "-o", out, "--", prog, arg], capture_output=True, env=env)
    if r.returncode:
        fail(f"run {coll} {arg}: {r.returncode}")


def counts(db, col):
    """Counted functions by (module file name, name); functions of one name
    in one module (static ones) by address order, as lists."""
    con = sqlite3.connect(db)
    got = defaultdict(list)
    for path, name, v in con.execute(f"SELECT m.path, f.name, f.{col} FROM functions f "
                                     f"JOIN modules m ON m.id = f.module WHERE f.{col} > 0 "
                                     "ORDER BY m.path, f.name, f.addr"):
        got[(os.path.basename(path), name)].append(v)
    return got


a, b = os.path.join(work, "a.db"), os.path.join(work, "b.db")
run("fcount,bbcount", a, arg_a)
run("fcount,bbcount", b, arg_b)
r = subprocess.run([reticle, "diff", "--top", "0", "--no-demangle", a, b], capture_output=True, text=True)
if r.returncode:
    fail(f"diff: {r.returncode} {r.stderr}")
ca, cb = counts(a, "instrs"), counts(b, "instrs")
rows, last, seen = 0, None, defaultdict(int)
for line in r.stdout.splitlines():
    m = re.match(r"\s*(\S+)\s+(\S+)\s+([+-]?\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+) \((\S+)\)$", line)
    if not m or m.group(1) == "Ir":
        continue
    rows += 1
    key = (m.group(8), m.group(7))
    x = 0 if m.group(1) == "-" else int(m.group(1))
    y = 0 if m.group(2) == "-" else int(m.group(2))
    # a name met twice in a module: paired in address order, each pair a row
    pairs = list(zip_longest(ca.get(key, []), cb.get(key, []), fillvalue=0))
    if pairs.count((x, y)) <= seen[(key, x, y)]:
        fail(f"{key}: diff says {x} and {y}, the profiles {pairs}")
    seen[(key, x, y)] += 1
    if int(m.group(3)) != y - x:
        fail(f"{key}: B - A {m.group(3)}, not {y - x}")
    if x and abs(float(m.group(4)) - y / x) > 0.0005 + 1e-3 * y / x:
        fail(f"{key}: B/A {m.group(4)}, not {y / x:.3f}")
    if last is not None and abs(y - x) > last:
        fail(f"{key}: out of order ({abs(y - x)} after {last})")
    last = abs(y - x)
want = sum(max(len(ca.get(k, [])), len(cb.get(k, []))) for k in set(ca) | set(cb))
if rows != want:
    fail(f"{rows} rows, {want} functions counted in either")
print(f"{rows} rows checked")

# bad input
r = subprocess.run([reticle, "diff", a, os.path.join(work, "none.db")], capture_output=True, text=True)
if r.returncode != 1 or len(r.stderr.splitlines()) != 1 or "none.db" not in r.stderr:
    fail(f"missing profile: {r.returncode} {r.stderr}")
r = subprocess.run([reticle, "diff", a], capture_output=True, text=True)
if r.returncode != 2:
    fail(f"one profile: status {r.returncode}")
c = os.path.join(work, "c.db")
subprocess.run([reticle, "run", "-c", "calltime", "-o", c, "--", "/bin/true"], capture_output=True, env=env)
con = sqlite3.connect(c)
con.execute("UPDATE functions SET calls = 0, instrs = 0, have = 0")
con.commit()
con.close()
r = subprocess.run([reticle, "diff", a, c], capture_output=True, text=True)
if r.returncode != 1 or "no count in common" not in r.stderr:
    fail(f"nothing in common: {r.returncode} {r.stderr}")
print(f"{fails} failures")
sys.exit(1 if fails else 0)
