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
import os, shutil, subprocess, sys, time

reticle, work, prog = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), XDG_RUNTIME_DIR=work)
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg, flush=True)


def want(n):
    return sum(n + i + 1000 for i in range(256)) + 256 * (n + 1000)


p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ask(n):
    p.stdin.write(f"{n}\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        fail(f"no answer to {n}: the program ended ({p.wait()})")
        return False
    if int(line) != want(n):
        fail(f"{n}: answered {line.strip()}, want {want(n)}")
    return True


try:
    for n in range(3):
        ask(n)
    for c in range(4):
        errf = os.path.join(work, f"attach{c}.err")
        with open(errf, "w") as e:
            a = subprocess.Popen([reticle, "attach", "-c", "fcount", "-o", os.path.join(work, f"a{c}.db"),
                                  str(p.pid)], stderr=e, env=env)
        while "instrumenting" not in open(errf).read() and a.poll() is None:
            time.sleep(0.05)
        if a.poll() is not None:
            err = open(errf).read()
            if "not allowed" in err:
                print("SKIP: " + err.strip())
                sys.exit(77)
            fail(f"cycle {c}: attach exited {a.returncode}: {err}")
            break
        time.sleep(0.3)   # the warm-start batch is placed while the process runs
        alive = all(ask(n) for n in range(100 * c, 100 * c + 3))
        d = subprocess.run([reticle, "detach", str(p.pid)], capture_output=True, text=True, env=env, timeout=60)
        a.wait(timeout=60)
        err = open(errf).read()
        if not alive:
            print(err[-2000:])
            break
        if d.returncode or a.returncode or "stays mapped" in err:
            fail(f"cycle {c}: detach {d.returncode} {d.stderr.strip()}, attach {a.returncode}: {err}")
        left = [line.strip() for line in open(f"/proc/{p.pid}/maps") if "reticle" in line]
        if left or "TracerPid:\t0\n" not in open(f"/proc/{p.pid}/status").read():
            fail(f"cycle {c}: not left as it was: {left[:3]}")
    p.stdin.close()
    if p.wait(timeout=60) != 0:
        fail(f"the program ended with status {p.returncode}")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
print(f"{fails} failure(s)")
sys.exit(1 if fails else 0)
