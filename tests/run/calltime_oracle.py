#!/usr/bin/env python3
"""Checks calltime's times against what the program measured of itself.

usage: calltime_oracle.py RETICLE WORKDIR -- PROGRAM ARGS...

The program (programs/phases.c) prints "time FUNCTION TID CALLS INCLUSIVE
EXCLUSIVE" for phases it timed with its own clock ("-" for a time it does
not know) and "thread TID SECONDS" for each worker thread's run. Checked,
in a cold run and in a warm one: the exit status is the native one; each
timed function's calls equal the program's count in that thread, and its
inclusive and exclusive seconds are within 2% (or 2 ms) of the program's;
each worker thread's exclusive times add up to its run time (the inclusive
time of its outermost frame, which is longer than what the program measured
of it) within 2% (or 2 ms). A thread preempted where the program does not
measure itself (between its own clock reads) makes a wall-clock time differ
from its truth: a run whose times disagree is tried again, up to 5 runs;
counts must agree in every run. Exits 0 when all agree."""
import os, shutil, sqlite3, subprocess, sys


def close(got, want, sampled=False):
    # a sampled leaf's time is estimated from some of its calls: a
    # preemption in one of the others is in the program's measure only
    rel, ab = (0.10, 0.005) if sampled else (0.02, 0.002)
    return abs(got - want) <= max(rel * want, ab)


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    native = subprocess.run(prog, capture_output=True, text=True, timeout=120)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    for run in ("cold", "warm"):
        for attempt in range(5):
            res = check(reticle, work, prog, env, native, run)
            if res != "times":
                break
            print(f"{run}: times differ (attempt {attempt + 1}); again")
        if res:
            return 1
    return 0


def check(reticle, work, prog, env, native, run):
    """None when all agree, "times" when only times differ, else "fail"."""
    failures = timing = 0
    if run == "cold":
        shutil.rmtree(env["RETICLE_CACHE_DIR"], ignore_errors=True)
    db = os.path.join(work, run + ".db")
    r = subprocess.run([reticle, "run", "-c", "calltime", "-o", db, "--"] + prog,
                       capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != native.returncode:
        print(f"FAIL {run}: exit status {r.returncode}, natively {native.returncode}\n{r.stderr}")
        return "fail"
    con = sqlite3.connect(db)
    rows = {(name, tid): (calls, inc, exc) for name, tid, calls, inc, exc in con.execute(
        "SELECT f.name, t.tid, t.calls, t.inclusive, t.exclusive FROM function_times t"
        " JOIN functions f ON f.id = t.function")}
    by_tid, life = {}, {}
    for (_, tid), (_, inc, exc) in rows.items():
        by_tid[tid] = by_tid.get(tid, 0.0) + exc
        life[tid] = max(life.get(tid, 0.0), inc)
    checked = 0
    for line in r.stdout.splitlines():
        w = line.split()
        if w and w[0] == "time":
            name, tid, calls = w[1], int(w[2]), int(w[3])
            got = rows.get((name, tid))
            if not got:
                print(f"FAIL {run}: no time for {name} in thread {tid}")
                failures += 1
                continue
            if got[0] != calls:
                print(f"FAIL {run}: {name}: {got[0]} calls, the program made {calls}")
                failures += 1
            for what, i, want in (("inclusive", 1, w[4]), ("exclusive", 2, w[5])):
                if want != "-" and not close(got[i], float(want), w[6:7] == ["sampled"]):
                    print(f"FAIL {run}: {name}: {what} {got[i]:.6f} s, measured {float(want):.6f} s")
                    timing += 1
            checked += 1
        elif w and w[0] == "thread":
            tid, secs = int(w[1]), float(w[2])
            got, ran = by_tid.get(tid, 0.0), life.get(tid, 0.0)
            if not close(got, ran) or ran < secs:
                print(f"FAIL {run}: thread {tid}: exclusive times add up to {got:.6f} s,"
                      f" it ran {ran:.6f} s (at least {secs:.6f} s)")
                timing += 1
            checked += 1
    if checked < 3:
        print(f"FAIL {run}: the program printed {checked} phases:\n{r.stdout}")
        return "fail"
    print(f"{run}: {checked} phases checked")
    return "fail" if failures else "times" if timing else None


if __name__ == "__main__":
    sys.exit(main())
