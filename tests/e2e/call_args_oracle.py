#!/usr/bin/env python3
"""examples/scripts/call_args.lua: RTL_PRIM_CALL (the slow path: a trap
into reticle, the collector's on_call with the thread's arguments) behind
an inline predicate, at a function's entry, and at its returns with the
return value; against what the program (tests/run/programs/call_args.c,
two threads) says it passed and got back.

usage: call_args_oracle.py RETICLE SCRIPT PROGRAM"""
import re, subprocess, sys

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def main():
    reticle, script, prog = sys.argv[1:4]
    for n, lo, lines in ((1000, 900, 5), (20000, 0, 3), (5000, 4999, 20), (3000, 10 ** 9, 4)):
        r = subprocess.run([reticle, "script", script, "work", str(lo), str(lines), "--", prog, str(n), str(lo)],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 3:
            fail(f"n={n} min={lo}: exit {r.returncode} (the program's is 3): {r.stderr[-1500:]}")
            continue
        want = re.search(r"^program: (\d+) calls passed, first arguments sum (\d+); (\d+) returns, values sum (-?\d+)$",
                         r.stdout, re.M)
        got = re.search(r"^call_args: (\d+) calls of work passed, their first arguments sum to (-?\d+); "
                        r"(\d+) returns, values sum to (-?\d+)$", r.stdout, re.M)
        if not want or not got:
            fail(f"n={n} min={lo}: output {r.stdout[-1500:]!r}")
            continue
        if want.groups() != got.groups():
            fail(f"n={n} min={lo}: the script saw {got.groups()}, the program {want.groups()}")
        shown = re.findall(r"^work\((-?\d+), (-?\d+), (-?\d+)\) in thread \d+$", r.stdout, re.M)
        if len(shown) != min(lines, int(want.group(1))):
            fail(f"n={n} min={lo}: {len(shown)} lines shown")
        for i, sq, k in shown:
            if int(i) < lo or int(sq) != int(i) * int(i) or int(k) != 7:
                fail(f"n={n} min={lo}: a call shown as work({i}, {sq}, {k})")
                break
        print(f"ok: n={n} min={lo}: {got.group(1)} calls passed, {got.group(3)} returns, as the program says")
    r = subprocess.run([reticle, "script", script, "no_such_function", "--", prog, "10"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 3 or "no function named no_such_function ran" not in r.stderr:
        fail(f"a function that does not exist: exit {r.returncode}, {r.stderr[-500:]!r}")
    r = subprocess.run([reticle, "script", script], capture_output=True, text=True)
    if r.returncode == 0 or "usage" not in r.stderr:
        fail(f"no arguments: exit {r.returncode}, {r.stderr!r}")
    print(f"{fails} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
