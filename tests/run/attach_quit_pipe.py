#!/usr/bin/env python3
"""An attached reticle that gets SIGQUIT (Ctrl-\\) or SIGPIPE (the reader of
its output gone: `reticle top PID | head`) ends the measurement as Ctrl-C
does and leaves the process as it was: running, untraced, without
reticle's code mapped. Before, reticle died of them and left the process
with its patches and code cache (it died at its next first call).
attach -c fcount and -c sample (profile written), top PID, probe -p PID;
debug -p PID (its breakpoints too) at SIGTERM, SIGHUP and SIGQUIT, which
says the process runs on.

usage: attach_quit_pipe.py RETICLE WORKDIR LOOP
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


def no_core():
    for s in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(s, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # no core file left, whatever happens


def left_as_it_was(what, target, err):
    """Whether TARGET runs on as it was, said."""
    time.sleep(0.3)
    if target.poll() is not None:
        fail(f"{what}: the process has ended ({target.returncode}); stderr {err!r}")
        return False
    status = open(f"/proc/{target.pid}/status").read()
    maps = open(f"/proc/{target.pid}/maps").read()
    if "TracerPid:\t0\n" not in status or "reticle" in maps:
        fail(f"{what}: the process was not left as it was: stderr {err!r}, "
             f"{[l for l in maps.splitlines() if 'reticle' in l][:2]}")
        return False
    return True


def case(what, args, sig=None, pipe=False, ready="until it ends"):
    """reticle ARGS PID on a fresh LOOP; SIG sent to reticle once it
    measures (once READY is in its output), or its stdout a pipe closed
    after the first line."""
    target = subprocess.Popen([loop], preexec_fn=no_core)
    try:
        time.sleep(0.2)
        errf = os.path.join(work, "err")
        with open(errf, "w") as e:
            p = subprocess.Popen([reticle] + args + [str(target.pid)], stdout=subprocess.PIPE if pipe else e,
                                 stderr=e, stdin=subprocess.DEVNULL, env=env, preexec_fn=no_core)
            if pipe:   # as head -1: one line read, then gone
                p.stdout.readline()
                p.stdout.close()
            else:
                deadline = time.time() + 30
                while ready not in open(errf).read() and time.time() < deadline:
                    time.sleep(0.05)
                time.sleep(0.5)
                p.send_signal(sig)
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                fail(f"{what}: reticle did not end")
                return
        err = open(errf).read()
        if not left_as_it_was(what, target, err):
            return
        if rc != 0:
            fail(f"{what}: exit status {rc}, stderr {err!r}")
        elif "-o" in args and "profile written" not in err:
            fail(f"{what}: no profile written: {err!r}")
        elif "debug" in args and "detached, running on" not in err:
            fail(f"{what}: not said to run on: {err!r}")
        else:
            print(f"ok [{what}]: exit status {rc}, the process runs on untouched")
    finally:
        target.kill()
        target.wait()


db = os.path.join(work, "p.db")
case("attach -c fcount, SIGQUIT", ["attach", "-c", "fcount", "-o", db], signal.SIGQUIT)
case("attach -c sample, SIGQUIT", ["attach", "-o", db], signal.SIGQUIT)
case("top PID | head -1", ["top", "--interval", "0.2"], pipe=True)
case("probe -i 0.2 -p PID | head -1", ["probe", "-i", "0.2", "entry:work { @n = count(); }", "-p"], pipe=True)
case("probe -p PID, SIGQUIT", ["probe", "entry:work { @n = count(); }", "-p"], signal.SIGQUIT)
for name, sig in (("SIGTERM", signal.SIGTERM), ("SIGHUP", signal.SIGHUP), ("SIGQUIT", signal.SIGQUIT)):
    case(f"debug -b work -p PID, {name}", ["debug", "-b", "work", "-p"], sig, ready="its threads held")
print("all passed" if not fails else f"{fails} failed")
sys.exit(1 if fails else 0)
