#!/usr/bin/env python3
"""Processes a program leaves running when it ends (tests/run/programs/
daemon.c): `reticle run` returns as the program does, not when they end
(a daemon at once, a background job after a second), with the program's
output and status; they are let go (no tracer, no int3 left where they
will call), and the work they do afterwards, in functions they call for
the first time then, gives what it gives natively; the profile's tree
shows them still running. With memtrace (copies that trap into reticle)
reticle waits for them instead, and says so.

usage: background.py RETICLE WORKDIR PROGRAM"""
import os, shutil, sqlite3, subprocess, sys, time

reticle, work, prog = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def wait_for(path, seconds):
    """The file's text once its line is whole: the program creates it
    before it computes what it writes (under load that took over the 0.1 s
    this once waited: the test read '' twice in a suite beside other work)."""
    end = time.time() + seconds
    text = None
    while time.time() < end:
        if os.path.exists(path):
            text = open(path).read()
            if text.endswith("\n"):
                break
        time.sleep(0.05)
    return text


def native_result(mode):
    go, out = os.path.join(work, f"n-{mode}.go"), os.path.join(work, f"n-{mode}.out")
    r = subprocess.run([prog, mode, go, out], capture_output=True, text=True, timeout=60)
    open(go, "w").close()
    return r, wait_for(out, 30)


for mode, most in (("daemon", 0.9), ("job", 3.0)):
    native, want = native_result(mode)
    for collector in ("fcount", "bbcount,calltime"):
        tag = f"{mode} {collector}"
        go, out = os.path.join(work, f"{mode}-{collector}.go"), os.path.join(work, f"{mode}-{collector}.out")
        db = os.path.join(work, f"{mode}-{collector}.db")
        t0 = time.time()
        r = subprocess.run([reticle, "run", "-c", collector, "-o", db, "--", prog, mode, go, out],
                           capture_output=True, text=True, env=env, timeout=60)
        took = time.time() - t0
        if r.returncode != native.returncode or r.stdout != native.stdout:
            fail(f"{tag}: exit {r.returncode} (native {native.returncode}), stdout {r.stdout!r}")
        if took > most + 0.5:
            fail(f"{tag}: reticle returned after {took:.2f} s (at most {most + 0.5:.1f})")
        if "let go" not in r.stderr:
            fail(f"{tag}: no word of the process let go: {r.stderr}")
        # let go: no tracer, then its late work as natively
        pids = subprocess.run(["pgrep", "-f", f"{prog} {mode} {go}"], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                tracer = [l for l in open(f"/proc/{pid}/status") if l.startswith("TracerPid")][0].split()[1]
                if tracer != "0":
                    fail(f"{tag}: pid {pid} still traced by {tracer}")
            except OSError:
                pass
        open(go, "w").close()
        got = wait_for(out, 30)
        if got != want:
            fail(f"{tag}: the child's work after it was let go: {got!r}, natively {want!r}")
        con = sqlite3.connect(db)
        statuses = [s for (s,) in con.execute("SELECT exit_status FROM processes")]
        if -2 not in statuses:
            fail(f"{tag}: the tree shows no process still running: {statuses}")
        print(f"{tag}: returned after {took:.2f} s, child's result {got.strip() if got else None}")

# memtrace's copies trap into reticle: the daemon is waited for, with a word
go, out = os.path.join(work, "mt.go"), os.path.join(work, "mt.out")
proc = subprocess.Popen([reticle, "run", "-c", "memtrace", "-o", os.path.join(work, "mt.db"), "--", prog,
                         "daemon", go, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
time.sleep(1.5)
still = proc.poll() is None
open(go, "w").close()
o, e = proc.communicate(timeout=60)
if not still or proc.returncode != 3 or "waiting for" not in e:
    fail(f"memtrace: reticle {'waited' if still else 'did not wait'}, exit {proc.returncode}: {e}")
if wait_for(out, 5) != native_result("daemon")[1]:
    fail("memtrace: the daemon's result differs")

print(f"{fails} failed")
sys.exit(1 if fails else 0)
