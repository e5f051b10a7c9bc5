#!/usr/bin/env python3
"""reticle's own calls into the target are not the program's work.

usage: inferior_call_counts.py RETICLE WORKDIR -- PROGRAM ARGS...

reticle registers its copies' unwind information by calling libgcc's
__register_frame_info inside the target (a C++ program's modules can
catch); those calls ran the counted copies of __register_frame_info and
of what it calls (its lock), and fcount and bbcount counted them: 112
calls of __register_frame_info in a program that makes none. Checked, cold
and warm: the calls of every function named __register_frame_info* under
reticle (fcount,bbcount) equal callgrind's for the same program, and the
output and exit status are the native ones. Exits 0 when all agree."""
import os, shutil, sqlite3, subprocess, sys
from callgrind_oracle import parse_callgrind


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    native = subprocess.run(prog, capture_output=True, timeout=120)
    cg_out = os.path.join(work, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--skip-plt=no", "--demangle=no",
                    "--callgrind-out-file=" + cg_out] + prog, capture_output=True, timeout=600, check=True)
    want = {}
    for (_, fn), v in parse_callgrind(cg_out).items():
        if fn.startswith("__register_frame_info"):
            want[fn] = want.get(fn, 0) + v["calls"]
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    failures = 0
    for run in ("cold", "warm"):
        db = os.path.join(work, run + ".db")
        r = subprocess.run([reticle, "run", "-c", "fcount,bbcount", "-o", db, "--"] + prog,
                           capture_output=True, timeout=300, env=env)
        if r.returncode != native.returncode or r.stdout != native.stdout:
            print(f"FAIL {run}: status {r.returncode} (natively {native.returncode}) or output differs")
            failures += 1
            continue
        got = {}
        for name, calls in sqlite3.connect(db).execute(
                "SELECT name, calls FROM functions WHERE name LIKE '\\_\\_register\\_frame\\_info%' ESCAPE '\\'"
                " AND calls IS NOT NULL"):
            got[name] = got.get(name, 0) + calls
        for name in sorted(set(got) | set(want)):
            if got.get(name, 0) != want.get(name, 0):
                print(f"FAIL {run}: {name}: {got.get(name, 0)} calls, callgrind {want.get(name, 0)}")
                failures += 1
        print(f"{run}: {sum(got.values())} calls of __register_frame_info*, callgrind {sum(want.values())}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
