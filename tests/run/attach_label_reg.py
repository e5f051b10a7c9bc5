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
import subprocess, sys
from attach_cycle import Session

reticle, work, prog = sys.argv[1:4]
t = Session(reticle, work, RETICLE_VERBOSE="3")
prev = 0
sent = 0
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
        t.fail(f"no answer to {n}: the program ended ({p.wait()})")
        return False
    if int(line) != want:
        t.fail(f"{n}: answered {line.strip()}, want {want}")
    return True


try:
    alive = all(ask(n) for n in range(5))
    for c in range(3):
        if not alive:
            break
        attached = t.attach(p.pid, f"cycle {c}")
        if not attached:
            break
        alive = all(ask(n) for n in range(100 * c + 1, 100 * c + 11))
        t.detach(p.pid, attached, f"cycle {c}")
        if alive:
            t.left_as_it_was(p.pid, f"cycle {c}")
            alive = all(ask(n) for n in range(100 * c + 50, 100 * c + 55))
    if alive:
        p.stdin.close()
        tail = p.stdout.read()
        if p.wait(timeout=60) != 0 or tail.strip() != f"lines {sent}":
            t.fail(f"the program: status {p.returncode}, ended with {tail!r} ({sent} lines)")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
t.done()
