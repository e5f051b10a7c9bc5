#!/usr/bin/env python3
"""Detaching leaves no window mapped when no frame can resume in one.

usage: attach_table_call.py RETICLE WORKDIR PROGRAM [COLLECTOR]

- programs/attach_table_call.c (fcount): calls through a table of code
  pointers ('call [T+rI*8]', a non-PIE build's; python3.11's BINARY_OP
  calls binary_ops[oparg] so) push original return addresses. Such a call
  in a copy pushed its code-cache return address, and a thread blocked
  below it (here, reading its next line) held that word on its stack at
  the detach: the windows stayed mapped, at every attach (an attached
  python3 -m http.server: one detach in four).
- programs/attach_syscall_rcx.c (calltime): a system call made in a copy
  leaves its return address, in the code cache, in rcx; calltime's timer
  stop after it saves rcx below rsp, and a deeper frame that leaves a
  large buffer unwritten (the next read's) holds that word at the detach.
  No frame resumes after a 'syscall': the windows stayed mapped, every
  attach (http.server: every attach, 3 to 7 such words).

PROGRAM answers mix(N) for each line N and says how many lines it read
at the end. Three attach/detach cycles of COLLECTOR (default fcount), ten
lines while attached: every answer right (computed here), mix() and
next_line() counted (or timed) 10 times each, and after each detach no
mapping of reticle's left, the text equal to the files, the process
untraced. The counts come from the JSON report without --all: a calltime
profile has times and no counts, and its functions must be listed. Exit 77 when the machine does not let reticle trace a process."""
import json, subprocess, sys, time
from attach_cycle import Session

reticle, work, prog = sys.argv[1:4]
collector = sys.argv[4] if len(sys.argv) > 4 else "fcount"
t = Session(reticle, work)


def mix(x):
    for i in range(5):
        x = (x * 31 + i) % 1000003
    return x


p = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
wrong = 0
sent = 0


def ask(n):
    global wrong, sent
    p.stdin.write(f"{n}\n")
    p.stdin.flush()
    sent += 1
    if int(p.stdout.readline()) != mix(n):
        wrong += 1


def wait_in_read(pid):
    """Until PID blocks in read(0, ...) again: its answer is out before it
    calls next_line for the next line, which the detach must find begun."""
    for _ in range(500):
        try:
            with open(f"/proc/{pid}/syscall") as f:
                if f.read().split()[:2] == ["0", "0x0"]:
                    return
        except OSError:
            pass
        time.sleep(0.01)


try:
    for n in range(5):
        ask(n)
    for c in range(3):
        # attached while the program waits in next_line, whose running
        # call is not counted: attached just before it, it was (11 calls)
        wait_in_read(p.pid)
        attached = t.attach(p.pid, f"cycle {c}", collector)
        if not attached:
            break
        for n in range(100 * c, 100 * c + 10):
            ask(n)
        wait_in_read(p.pid)
        t.detach(p.pid, attached, f"cycle {c}")
        t.left_as_it_was(p.pid, f"cycle {c}")
        db = attached[2]
        r = subprocess.run([reticle, "report", "--format", "json", db], capture_output=True, text=True)
        got = {}
        if not r.returncode:   # fcount's calls, or calltime's timed calls (threads added up)
            d = json.loads(r.stdout)
            names = {f["id"]: f["name"] for f in d["functions"]}
            got = {f["name"]: f["calls"] for f in d["functions"] if f.get("calls")}
            for tm in d.get("times", []):
                got[names.get(tm["function"])] = got.get(names.get(tm["function"]), 0) + tm["calls"]
        if (got.get("mix"), got.get("next_line")) != (10, 10):
            t.fail(f"cycle {c}: mix {got.get('mix')}, next_line {got.get('next_line')} calls: 10 lines sent")
        for n in range(5):
            ask(1000 + n)
    p.stdin.close()
    tail = p.stdout.read()
    if p.wait(timeout=60) != 0 or tail.strip() != f"lines {sent}" or wrong:
        t.fail(f"the program: status {p.returncode}, {wrong} wrong answers, ended with {tail!r} ({sent} lines)")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
t.done()
