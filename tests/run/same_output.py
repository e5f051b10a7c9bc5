#!/usr/bin/env python3
"""Runs a program natively and under `reticle run` with each collector set,
and checks that stdout and the exit status are identical (the native run is
the oracle), that a profile was written, and optionally that call counts of
named functions equal what the program itself reports. Each collector set
runs twice: with an empty warm-start cache, then with what that run left,
checking the copies placed (made ahead, or saved) against fresh ones
(verify_copies.py). A run with the sample collector must have sampled
stacks in its profile when the program ran long enough to be sampled.

usage: same_output.py RETICLE WORKDIR [--stdin FILE] [--calls NAME=N ...]
                      [--collectors LIST ...] [--repeat N] [--timeout S]
                      [--loose-times] -- PROGRAM ARGS...
The unwind information of relocated code must have been registered (no
warning that it was not). A calltime run must have no negative exclusive time (--loose-times: not
checked, for Go, whose stack switches calltime's frames cannot follow).
--repeat N runs each cold and warm pair N times (races show up in some runs
only); a run still going after --timeout S seconds (default 600) is a hang."""
import glob
import json, os, shutil, sqlite3, subprocess, sys
import sampling
import verify_copies



def head_and_tail(err):
    """A failed run's stderr: its start (a runtime's error message comes
    before its traceback) and its end (reticle's own lines)."""
    text = err.decode(errors="replace")
    return text if len(text) <= 3000 else text[:1000] + "\n[...]\n" + text[-2000:]

def run(cmd, stdin_path, env=None, timeout=600):
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        return subprocess.run(cmd, stdin=stdin, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        print(f"FAIL: still running after {timeout} s (a hang): {' '.join(cmd)}")
        print((e.stderr or b"").decode(errors="replace")[-2000:])
        sys.exit(1)
    finally:
        if stdin_path:
            stdin.close()


def shell_status(code):
    """Exit status as a shell reports it: 128+N for a death by signal N."""
    return 128 - code if code < 0 else code


def main():
    args = sys.argv[1:]
    reticle, work = args[0], args[1]
    sep = args.index("--")
    opts, prog = args[2:sep], args[sep + 1:]
    stdin_path, calls, sets, repeat, timeout = None, {}, [], 1, 600
    # Go switches goroutine stacks under the frames calltime pairs by stack
    # pointer (docs/engine.md): its times are not exact, so not checked
    loose_times = "--loose-times" in opts
    opts = [o for o in opts if o != "--loose-times"]
    i = 0
    while i < len(opts):
        if opts[i] == "--stdin":
            stdin_path = opts[i + 1]
        elif opts[i] == "--calls":
            name, n = opts[i + 1].split("=")
            calls[name] = int(n)
        elif opts[i] == "--collectors":
            sets.append(opts[i + 1])
        elif opts[i] == "--repeat":
            repeat = int(opts[i + 1])
        elif opts[i] == "--timeout":
            timeout = float(opts[i + 1])
        i += 2
    # the sampler rides along with counters (stacks through the code cache)
    # and runs alone (the program native but for perf_event); shim's
    # signal stores and observer on every program too
    sets = sets or ["fcount", "bbcount", "fcount,bbcount,loops,sample", "calltime", "sample", "shim"]
    if any("sample" in s.split(",") for s in sets):
        why = sampling.unavailable(reticle)
        if why:   # no perf_event here (a container, perf_event_paranoid 3): not reticle's fault
            print(f"note: the sample collector is left out here: {why}")
            sets = [",".join(c for c in s.split(",") if c != "sample") for s in sets]
            sets = [s for s in dict.fromkeys(sets) if s]
    os.makedirs(work, exist_ok=True)
    native = run(prog, stdin_path)
    ok = True
    # sample alone relocates nothing: no warm start to check
    for cs, warm in [(cs, warm) for _ in range(repeat) for cs in sets for warm in (False, True)
                     if not (warm and cs == "sample")]:
        # each set runs twice: cold (an empty warm-start cache), then warm
        # (what the first run recorded relocated at the entry point)
        tag = f"{cs} {'warm' if warm else 'cold'}"
        cache = os.path.join(work, "cache-" + cs.replace(",", "_"))
        if not warm:
            shutil.rmtree(cache, ignore_errors=True)
        env = dict(os.environ, RETICLE_CACHE_DIR=cache, **verify_copies.ENV)
        db = os.path.join(work, cs.replace(",", "_") + ".db")
        # every image (fork, exec) goes into the one profile: nothing beside it
        # (bbv's vectors are the one file of their own: STEM.bb and its .pc)
        later = lambda: [f for f in glob.glob(os.path.join(work, cs.replace(",", "_") + ".*"))
                         if f != db and not ("bbv" in cs.split(",") and ".bb" in os.path.basename(f))]
        for old in [db] + later():
            if os.path.exists(old):
                os.unlink(old)
        r = run([reticle, "run", "--stats", "-c", cs, "-o", db, "--"] + prog, stdin_path, env, timeout)
        if r.stdout != native.stdout:
            print(f"FAIL [{tag}]: stdout differs ({len(r.stdout)} vs {len(native.stdout)} bytes)")
            print(head_and_tail(r.stderr))
            ok = False
        if r.returncode != shell_status(native.returncode):
            print(f"FAIL [{tag}]: exit status {r.returncode}, native {shell_status(native.returncode)}")
            print(head_and_tail(r.stderr))
            ok = False
        why = verify_copies.problem(r.stderr.decode(errors="replace"), warm, cs)
        # a process left to run uninstrumented: its counts are missing; a
        # %gs base warning where no program here sets one (a vfork child's
        # exec resets it: not the program's doing)
        lost = [l for l in r.stderr.decode(errors="replace").splitlines()
                if "the new program runs without instrumentation" in l or "cannot follow child" in l
                or "set its own %gs base" in l]
        if not why and lost:
            why = lost[0]
        if not why and b"not registered" in r.stderr:   # backtraces and exceptions would fail
            why = "the unwind information of relocated code was not registered: " + \
                  r.stderr.decode(errors="replace").split("not registered")[1][:200]
        if why:
            print(f"FAIL [{tag}]: {why}")
            ok = False
        if not os.path.exists(db):
            print(f"FAIL [{tag}]: no profile {db}")
            ok = False
            continue
        if later():
            print(f"FAIL [{tag}]: files beside the profile: {later()}")
            ok = False
        rows, failed = [], False
        for prof in [db]:
            rep = subprocess.run([reticle, "report", "--format", "json", "--all", prof],
                                 capture_output=True)
            if rep.returncode != 0:
                print(f"FAIL [{tag}]: report of {prof} failed: {rep.stderr.decode()}")
                failed = True
                break
            doc = json.loads(rep.stdout)
            rows += doc["functions"]
            if "sample" in cs.split(","):
                # every sample taken is in the profile, in some image's stacks
                taken = int(doc["meta"].get("sample_count", "-1"))
                written = (doc.get("samples") or {}).get("count", 0)
                if taken != written:
                    print(f"FAIL [{tag}]: {taken} samples taken, {written} in the profile")
                    failed = True
        if failed:
            ok = False
            continue
        if "fcount" in cs and calls:
            for name, n in calls.items():
                got = sum(f.get("calls") or 0 for f in rows if f["name"] == name)
                if got != n:
                    print(f"FAIL [{tag}]: {name} called {got} times under reticle, program says {n}")
                    ok = False
        if "calltime" in cs and not loose_times:
            # a frame's exclusive time is its ticks less its children's:
            # never negative unless time was counted twice (reticle's own
            # inferior calls as the program's callees did)
            con = sqlite3.connect(db)
            neg = con.execute("SELECT f.name, t.exclusive FROM function_times t JOIN functions f"
                              " ON f.id = t.function WHERE t.exclusive < 0 ORDER BY t.exclusive LIMIT 3").fetchall()
            neg += con.execute("SELECT f.name, c.exclusive FROM contexts c JOIN functions f"
                               " ON f.id = c.function WHERE c.exclusive < 0 ORDER BY c.exclusive LIMIT 3").fetchall()
            con.close()
            if neg:
                print(f"FAIL [{tag}]: negative exclusive times: {neg}")
                ok = False
        stats = [l for l in r.stderr.decode(errors="replace").splitlines() if "traps" in l]
        print(f"ok [{tag}]: exit {r.returncode}, {len(r.stdout)} bytes of output; "
              f"{stats[-1].replace('reticle: ', '') if stats else ''}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
