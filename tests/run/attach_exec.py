#!/usr/bin/env python3
"""A program exec'd while reticle is attached is left as it was at the
detach too: sh waits for a line, is attached (fcount), then execs
/bin/cat, which echoes lines while attached and after the detach. The new
image was set up like a launch: its entry int3s and jumps were not in the
undo log, nor did it run with original return addresses, so the detach
left them in its text and unmapped the code they lead to (a bash loop's
$(...) children died of SIGTRAP, their output lost, at about one detach
in two; here cat died at the first line after the detach).

usage: attach_exec.py RETICLE WORKDIR
Three rounds: every line echoed, cat's text equal to the file after the
detach, no mapping of reticle's left, status 0 at the end of its input.
Exit 77 when the machine does not let reticle trace a process."""
import subprocess, sys, time
from attach_cycle import Session

reticle, work = sys.argv[1:3]
t = Session(reticle, work)

for r in range(3):
    p = subprocess.Popen(["/bin/sh", "-c", "read a; exec /bin/cat"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)
        attached = t.attach(p.pid, f"round {r}")
        if not attached:
            break
        p.stdin.write("go\n")   # sh execs cat, attached

        def echo(line):
            p.stdin.write(line + "\n")
            p.stdin.flush()
            got = p.stdout.readline()
            if got != line + "\n":
                t.fail(f"round {r}: cat echoed {got!r} for {line!r} (status {p.poll()})")
                return False
            return True

        alive = all(echo(f"attached {r} {i}") for i in range(5))
        t.detach(p.pid, attached, f"round {r}")
        if alive and p.poll() is None:
            t.left_as_it_was(p.pid, f"round {r}: cat")
        alive = alive and all(echo(f"detached {r} {i}") for i in range(5))
        p.stdin.close()
        rest = p.stdout.read()
        if p.wait(timeout=60) != 0 or rest:
            t.fail(f"round {r}: cat ended with status {p.returncode}, {rest!r} left")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
t.done()
