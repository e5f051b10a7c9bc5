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
import os, shutil, subprocess, sys, time

reticle, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), XDG_RUNTIME_DIR=work)
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg, flush=True)


def text_diffs(pid):
    bad = []
    with open(f"/proc/{pid}/maps") as f:
        maps = [line.split(None, 5) for line in f]
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for f in maps:
            if len(f) < 6 or "x" not in f[1] or not f[5].startswith("/") or "(deleted)" in f[5]:
                continue
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            mem.seek(lo)
            got = mem.read(hi - lo)
            with open(f[5].strip(), "rb") as fh:
                fh.seek(int(f[2], 16))
                want = fh.read(hi - lo)
            if got[:len(want)] != want[:len(got)]:
                bad.append(f[5].strip())
    return bad


for r in range(3):
    p = subprocess.Popen(["/bin/sh", "-c", "read a; exec /bin/cat"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)
        errf = os.path.join(work, f"attach{r}.err")
        with open(errf, "w") as e:
            a = subprocess.Popen([reticle, "attach", "-c", "fcount", "-o", os.path.join(work, f"a{r}.db"),
                                  str(p.pid)], stderr=e, env=env)
        while "instrumenting" not in open(errf).read() and a.poll() is None:
            time.sleep(0.05)
        if a.poll() is not None:
            err = open(errf).read()
            if "not allowed" in err:
                print("SKIP: " + err.strip())
                sys.exit(77)
            fail(f"round {r}: attach exited {a.returncode}: {err}")
            break
        p.stdin.write("go\n")   # sh execs cat, attached

        def echo(line):
            p.stdin.write(line + "\n")
            p.stdin.flush()
            got = p.stdout.readline()
            if got != line + "\n":
                fail(f"round {r}: cat echoed {got!r} for {line!r} (status {p.poll()})")
                return False
            return True

        alive = all(echo(f"attached {r} {i}") for i in range(5))
        d = subprocess.run([reticle, "detach", str(p.pid)], capture_output=True, text=True, env=env, timeout=60)
        a.wait(timeout=60)
        err = open(errf).read()
        if d.returncode or a.returncode or "stays mapped" in err:
            fail(f"round {r}: detach {d.returncode} {d.stderr.strip()}, attach {a.returncode}: {err[-1500:]}")
        if alive and p.poll() is None:
            left = [line.strip() for line in open(f"/proc/{p.pid}/maps") if "reticle" in line]
            if left or text_diffs(p.pid):
                fail(f"round {r}: cat not left as it was: {left[:2]} {text_diffs(p.pid)}")
        alive = alive and all(echo(f"detached {r} {i}") for i in range(5))
        p.stdin.close()
        rest = p.stdout.read()
        if p.wait(timeout=60) != 0 or rest:
            fail(f"round {r}: cat ended with status {p.returncode}, {rest!r} left")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
print(f"{fails} failure(s)")
sys.exit(1 if fails else 0)
