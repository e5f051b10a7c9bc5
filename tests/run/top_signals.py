#!/usr/bin/env python3
"""reticle top and the signals sent to reticle alone (kill PID).

Launched (top -- LOOP): as with `reticle run`, TERM, HUP, INT and QUIT go
on to the program, and top ends with it, soon, with its status (128+signal).
Before, TERM and INT were caught and did nothing: top ran on.
Attached (top PID): TERM, HUP and INT end top, which leaves the process
as it was: running, untraced, without reticle's code mapped. Before, HUP
killed reticle and left the process with its patches and code cache.

usage: top_signals.py RETICLE WORKDIR LOOP
LOOP (programs/probe_loop.c) calls work() for ever."""
import os, resource, shutil, signal, subprocess, sys, time

reticle, work, loop = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), XDG_RUNTIME_DIR=work)
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def default_signals():
    # a test run from a background job may have INT and QUIT ignored: the
    # program would inherit that
    for s in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(s, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # QUIT: no core file left


def top(args, sig):
    """reticle top ARGS, SIG sent to it after its second refresh: (exit
    status, stdout, stderr, seconds from the signal to its end), or None
    when it did not end."""
    out, err = os.path.join(work, "out"), os.path.join(work, "err")
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen([reticle, "top", "--interval", "0.2"] + args, stdout=o, stderr=e, env=env,
                             preexec_fn=default_signals)
        deadline = time.time() + 60
        while open(out).read().count("--- ") < 2 and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        sent = time.time()
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return None
    return rc, open(out).read(), open(err).read(), time.time() - sent


for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
    what = f"top -- loop, {sig.name} to reticle"
    r = top(["--", loop], sig)
    if r is None:
        fail(f"{what}: top did not end")
        continue
    rc, out, err, secs = r
    if rc != 128 + sig:
        fail(f"{what}: exit status {rc}, want {128 + sig}; stderr {err!r}")
    elif "work" not in out:
        fail(f"{what}: no refresh shows work(): {out[-1000:]!r}")
    elif secs > 10:
        fail(f"{what}: ended {secs:.1f} s after the signal")
    else:
        print(f"ok [{what}]: exit status {rc}")

target = subprocess.Popen([loop], preexec_fn=default_signals)
try:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        what = f"top PID, {sig.name} to reticle"
        r = top([str(target.pid)], sig)
        time.sleep(0.3)
        status = open(f"/proc/{target.pid}/status").read()
        maps = open(f"/proc/{target.pid}/maps").read()
        if r is None:
            fail(f"{what}: top did not end")
        elif target.poll() is not None:
            fail(f"{what}: the process has ended ({target.returncode})")
        elif "TracerPid:\t0\n" not in status or "reticle" in maps:
            fail(f"{what}: the process was not left as it was (exit status {r[0]}, stderr {r[2]!r}): "
                 f"{[l for l in status.splitlines() if 'Tracer' in l]}, "
                 f"{[l for l in maps.splitlines() if 'reticle' in l][:3]}")
        elif r[0] != 0 or "work" not in r[1]:
            fail(f"{what}: exit status {r[0]}, stderr {r[2]!r}, stdout {r[1][-500:]!r}")
        else:
            print(f"ok [{what}]: exit status {r[0]}, the process runs on untouched")
finally:
    target.kill()
    target.wait()

print("all passed" if not fails else f"{fails} failed")
sys.exit(1 if fails else 0)
