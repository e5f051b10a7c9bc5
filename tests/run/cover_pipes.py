#!/usr/bin/env python3
"""Copies given up while a process writes to a pipe: no data lost.

CPython's test_subprocess.test_communicate_pipe_buf, many times in one
parent: a child echoes 4 MiB from its stdin to its stdout through
sys.stdout.write (and 4 MiB to its stderr), the parent feeds and reads
it with communicate(). Under cover, hot copies are given up while this
runs. Threads used to be interrupted then to move out of the copies; an
interrupt cuts a blocking pipe write short, and CPython 3.11's buffered
writer then drops the rest (natively too, when a signal comes): the
parent got 65,583 bytes of 4,194,305. The oracle is the program's own
check (every byte back); the native run must pass it first.

usage: cover_pipes.py RETICLE WORKDIR PYTHON"""
import os, shutil, sqlite3, subprocess, sys

reticle, work, python = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
script = os.path.join(work, "communicate.py")
with open(script, "w") as f:
    f.write(r'''
import subprocess, sys
N = 4 * 1024 * 1024 + 1
child = ('import sys; sys.stdout.write(sys.stdin.read(47)); sys.stderr.write("x" * %d); '
         'sys.stdout.write(sys.stdin.read())' % N)
bad = 0
for i in range(int(sys.argv[1])):
    p = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(b"a" * N)
    if len(out) != N or len(err) != N or p.returncode:
        bad += 1
        print(f"child {i}: stdout {len(out)} of {N} bytes, stderr {len(err)}, exit {p.returncode}")
print(f"{bad} children lost data")
sys.exit(1 if bad else 0)
''')

native = subprocess.run([python, script, "10"], capture_output=True, text=True, timeout=300)
if native.returncode:
    print("SKIP: the native run lost data too:\n" + native.stdout)
    sys.exit(77)
failed = 0
cache = os.path.join(work, "cache")
shutil.rmtree(cache, ignore_errors=True)
for run in ("cold", "warm"):
    r = subprocess.run([reticle, "run", "-c", "cover", "-o", os.path.join(work, "p.db"), "--",
                        python, script, "30"], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, RETICLE_CACHE_DIR=cache))
    con = sqlite3.connect(os.path.join(work, "p.db"))
    row = con.execute("SELECT value FROM meta WHERE key = 'cover_copies_given_up'").fetchone()
    con.close()
    given = int(row[0]) if row else 0
    print(f"{'FAIL' if r.returncode else 'ok'} [{run}]: exit {r.returncode}, {given} copies given up; "
          f"{r.stdout.strip().splitlines()[-1:]}")
    if r.returncode:
        print(r.stdout[-2000:] + r.stderr[-2000:])
        failed += 1
    elif given == 0:   # nothing was given up: the test tested nothing
        print(f"FAIL [{run}]: no copy was given up while the children wrote")
        failed += 1
print(f"{2 - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
