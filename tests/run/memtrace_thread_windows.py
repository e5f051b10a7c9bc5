#!/usr/bin/env python3
"""memtrace --sample periodic over many short threads: every thread draws
its own window offsets.

usage: memtrace_thread_windows.py RETICLE WORKDIR PROGRAM

PROGRAM (programs/thread_phases.c) runs 2,000 short threads one after
another, each calling phase_a then phase_b, the same number of loads each.
A full memtrace run counts them equal; a run sampling 1 in 10
(periodic:10000:90000) must trace both (each between a quarter and four
times the other, and each at least 2% of its full count). With one
offset for every thread that reuses an area, phase_a was traced in every
thread and phase_b never. The output must be the native one. Exits 0 when
all hold."""
import os, shutil, sqlite3, subprocess, sys


def loads(db):
    q = ("SELECT f.name, SUM(m.value) FROM metrics m JOIN functions f ON f.id = m.function"
         " WHERE m.name = 'mem_loads' AND f.name IN ('phase_a', 'phase_b') GROUP BY f.name")
    return {n: int(v) for n, v in sqlite3.connect(db).execute(q)}


def main():
    reticle, work, prog = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    native = subprocess.run([prog], capture_output=True, text=True, timeout=120)
    got = {}
    for tag, extra in (("full", []), ("sampled", ["--sample", "periodic:10000:90000"])):
        db = os.path.join(work, tag + ".db")
        r = subprocess.run([reticle, "run", "-c", "memtrace"] + extra + ["-o", db, "--", prog],
                           capture_output=True, text=True, timeout=600, env=env)
        if r.returncode != native.returncode or r.stdout != native.stdout:
            print(f"FAIL {tag}: status {r.returncode} or output differs from native\n{r.stderr}")
            return 1
        got[tag] = loads(db)
        print(tag, got[tag])
    full, smp = got["full"], got["sampled"]
    if full.get("phase_a") != full.get("phase_b") or not full.get("phase_a"):
        print(f"FAIL full run: {full}")
        return 1
    a, b = smp.get("phase_a", 0), smp.get("phase_b", 0)
    ok = a >= 0.02 * full["phase_a"] and b >= 0.02 * full["phase_b"] and a <= 4 * b and b <= 4 * a
    if not ok:
        print(f"FAIL sampled: phase_a {a}, phase_b {b} of {full['phase_a']} each")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
