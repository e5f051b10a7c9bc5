#!/usr/bin/env python3
"""A register that holds a label of a copy at the detach gets the original
label. A copied jump table or computed goto gives the copy's labels; a
thread stopped between loading one and jumping there (python3.11's
dispatch, 'mov rax,[T'+rI*8]; jmp rax'), or keeping it in a callee-saved
register across a call, went to the unmapped copy once detached: an
attached python3 with four threads died of SIGSEGV about one detach in 20;
this program at the first line after every detach.

usage: attach_label_reg.py RETICLE WORKDIR PROGRAM
PROGRAM (programs/attach_label_reg.c, non-PIE: 'mov r12,[T+rbx*8]') keeps
the label chosen by a line in r12 while it reads the next one, and answers
op(N), the op chosen by the line before. Three attach/detach cycles
(fcount), ten lines while attached, five after: every answer right
(computed here), no mapping of reticle's left, the process untraced, the
program's count of lines at the end.
Exit 77 when the machine does not let reticle trace a process."""
import os, shutil, subprocess, sys, time

reticle, work, prog = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), XDG_RUNTIME_DIR=work,
           RETICLE_VERBOSE="3")
fails = 0
prev = 0
sent = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg, flush=True)


p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ask(n):
    """Whether the program answered N right (it answered at all)."""
    global prev, sent
    want = [3 * n, n + 7, n * n, -n][prev % 4]
    prev = n
    sent += 1
    p.stdin.write(f"{n}\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        fail(f"no answer to {n}: the program ended ({p.wait()})")
        return False
    if int(line) != want:
        fail(f"{n}: answered {line.strip()}, want {want}")
    return True


try:
    alive = all(ask(n) for n in range(5))
    for c in range(3):
        if not alive:
            break
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
        alive = all(ask(n) for n in range(100 * c + 1, 100 * c + 11))
        d = subprocess.run([reticle, "detach", str(p.pid)], capture_output=True, text=True, env=env, timeout=60)
        a.wait(timeout=60)
        err = open(errf).read()
        if d.returncode or a.returncode or "stays mapped" in err:
            fail(f"cycle {c}: detach {d.returncode} {d.stderr.strip()}, attach {a.returncode}: "
                 + "\n".join(l for l in err.splitlines() if "stop kind" not in l)[-2000:])
        if alive:
            left = [line.strip() for line in open(f"/proc/{p.pid}/maps") if "reticle" in line]
            if left or "TracerPid:\t0\n" not in open(f"/proc/{p.pid}/status").read():
                fail(f"cycle {c}: not left as it was: {left[:3]}")
            alive = all(ask(n) for n in range(100 * c + 50, 100 * c + 55))
    if alive:
        p.stdin.close()
        tail = p.stdout.read()
        if p.wait(timeout=60) != 0 or tail.strip() != f"lines {sent}":
            fail(f"the program: status {p.returncode}, ended with {tail!r} ({sent} lines)")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
print(f"{fails} failure(s)")
sys.exit(1 if fails else 0)
