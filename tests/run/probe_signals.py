#!/usr/bin/env python3
"""reticle probe -- COMMAND and the signals sent to reticle alone (kill
PID, not a terminal's process group): as with `reticle run`, TERM, HUP,
INT and QUIT go on to the command; once it has ended, the aggregations
collected so far are printed and reticle exits with the command's status
(128+signal when it died of it, its own when it caught it), soon. Before,
TERM and HUP killed reticle at once (nothing printed) and INT was ignored.

usage: probe_signals.py RETICLE WORKDIR LOOP
LOOP (programs/probe_loop.c) calls work() for ever."""
import os, re, resource, shutil, signal, subprocess, sys, time

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


def probe(program, command, sig, ready):
    """Runs reticle probe PROGRAM -- COMMAND, sends SIG to reticle's pid once
    READY(reticle's Popen) says the command runs: (exit status, stdout, stderr, seconds
    from the signal to reticle's end), or None when it did not end."""
    out, err = os.path.join(work, "out"), os.path.join(work, "err")
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen([reticle, "probe", program, "--"] + command, stdout=o, stderr=e, env=env,
                             preexec_fn=default_signals)
        deadline = time.time() + 60
        while not ready(p) and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        time.sleep(0.5)   # a few hundred calls counted
        sent = time.time()
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return None
    return rc, open(out).read(), open(err).read(), time.time() - sent


def running(name):
    """Whether reticle (P) runs NAME as its child."""
    return lambda p: subprocess.run(["pgrep", "-P", str(p.pid), "-f", name], capture_output=True).returncode == 0


# the loop dies of the signal: 128+signal, the count so far printed
for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
    what = f"probe -- loop, {sig.name} to reticle"
    r = probe("entry:work { @calls = count(); }", [loop], sig, running(os.path.basename(loop)))
    if r is None:
        fail(f"{what}: reticle did not end")
        continue
    rc, out, err, secs = r
    m = re.search(r"^@calls: (\d+)$", out, re.M)
    if rc != 128 + sig:
        fail(f"{what}: exit status {rc}, want {128 + sig}; stdout {out!r}, stderr {err!r}")
    elif not m or int(m.group(1)) == 0:
        fail(f"{what}: no aggregation printed: stdout {out!r}, stderr {err!r}")
    elif secs > 10:
        fail(f"{what}: ended {secs:.1f} s after the signal")
    else:
        print(f"ok [{what}]: exit status {rc}, @calls {m.group(1)}")

# a command that catches TERM and HUP: its handler runs, its status passes
trap = os.path.join(work, "trap.sh")
with open(trap, "w") as f:
    f.write("trap 'echo got TERM; exit 3' TERM\ntrap 'echo got HUP; exit 5' HUP\n"
            f": > {work}/ready\nwhile :; do sleep 0.1; done\n")
for sig, want in ((signal.SIGTERM, 3), (signal.SIGHUP, 5)):
    what = f"probe -- sh trap.sh, {sig.name} to reticle"
    ready = os.path.join(work, "ready")
    if os.path.exists(ready):
        os.unlink(ready)
    r = probe("entry:malloc { @m = count(); }", ["/bin/sh", trap], sig, lambda p: os.path.exists(ready))
    if r is None:
        fail(f"{what}: reticle did not end")
        continue
    rc, out, err, secs = r
    if rc != want or f"got {sig.name[3:]}" not in out:
        fail(f"{what}: exit status {rc}, want {want}, and the trap's line: stdout {out!r}, stderr {err!r}")
    elif not re.search(r"^@m: \d+$", out, re.M):
        fail(f"{what}: no aggregation printed: stdout {out!r}, stderr {err!r}")
    else:
        print(f"ok [{what}]: exit status {rc}, {out.strip().splitlines()}")

print("all passed" if not fails else f"{fails} failed")
sys.exit(1 if fails else 0)
