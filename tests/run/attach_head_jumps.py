#!/usr/bin/env python3
"""An attached process whose functions branch into the bytes of another's
entry jump, as ld.so's mempcpy goes on at memcpy+3: the second attach
places both from the warm-start list (what ran in the first), and a copy's
branch there must reach the other's copy, never its original bytes, which
the entry jump overwrites. It was noted for back-patching, which an
attached process skips for a field across two cache lines: the copy went
on inside the jump (an attached python3 http.server died of SIGSEGV in
ld.so's memcpy at a thread's start; this program of SIGILL).

usage: attach_head_jumps.py RETICLE WORKDIR PROGRAM
PROGRAM (programs/head_jumps.c): 256 such pairs, the jump's field at every
offset of a cache line in one copy or another; it answers each line N with
a sum the test computes. Four attach/detach cycles (fcount), three lines
in each: every answer right, the process alive and left as it was.
Exit 77 when the machine does not let reticle trace a process."""
import subprocess, sys, time
from attach_cycle import Session

reticle, work, prog = sys.argv[1:4]
t = Session(reticle, work)


def want(n):
    return sum(n + i + 1000 for i in range(256)) + 256 * (n + 1000)


p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ask(n):
    p.stdin.write(f"{n}\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        t.fail(f"no answer to {n}: the program ended ({p.wait()})")
        return False
    if int(line) != want(n):
        t.fail(f"{n}: answered {line.strip()}, want {want(n)}")
    return True


try:
    for n in range(3):
        ask(n)
    for c in range(4):
        attached = t.attach(p.pid, f"cycle {c}")
        if not attached:
            break
        time.sleep(0.3)   # the warm-start batch is placed while the process runs
        alive = all(ask(n) for n in range(100 * c, 100 * c + 3))
        err = t.detach(p.pid, attached, f"cycle {c}")
        if not alive:
            print(err[-2000:])
            break
        t.left_as_it_was(p.pid, f"cycle {c}")
    p.stdin.close()
    if p.wait(timeout=60) != 0:
        t.fail(f"the program ended with status {p.returncode}")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
t.done()
