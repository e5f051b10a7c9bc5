#!/usr/bin/env python3
"""The run's context (reticle run --from/--to/--modules/--functions) against
independent oracles: callgrind's --dump-before parts for spans between two
function calls (each function's Ir in the program, exactly), the program's
own structure for edges at events (tests/run/programs/span.c: how many
tick() calls followed its signal, dlopen, fork or exec), an unscoped run for
--modules, and clear errors for bad edges.

usage: span.py RETICLE WORKDIR PROGRAM"""
import os, shutil, sqlite3, subprocess, sys
from callgrind_parts import callgrind_parts

reticle, work, prog = sys.argv[1:4]
prog = os.path.realpath(prog)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def run(name, opts, args, collect="fcount,bbcount", expect=0):
    db = os.path.join(work, name + ".db")
    r = subprocess.run([reticle, "run", "-c", collect, "-o", db] + opts + ["--", prog] + args,
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != expect:
        fail(f"{name}: exit {r.returncode} (expected {expect}): {r.stderr.strip()}")
        return None, r
    return db, r


def program_rows(db, field):
    """name -> field of the program's own functions that counted."""
    con = sqlite3.connect(db)
    rows = con.execute(f"select name, sum({field}) from function_report where module = ? and {field} > 0 "
                       "group by name", (prog,)).fetchall()
    con.close()
    return dict(rows)


def add(*parts):
    total = {}
    for p in parts:
        for k, v in p.items():
            total[k] = total.get(k, 0) + v
    return total


# 1. spans between function calls, against callgrind's parts
COMPUTING = {"work", "phase_a", "phase_b"}
if shutil.which("valgrind"):
    before, between, after = callgrind_parts(prog, ["phases"], work, ["parse", "emit"])
    if not between.get("work") or not before.get("work"):
        fail(f"callgrind's parts lack work(): {before} {between}")
    cases = [("between", ["--from", "call:parse", "--to", "call:emit"], between),
             ("until", ["--to", "call:emit"], add(before, between)),
             ("from", ["--from", "call:parse"], add(between, after))]
    for rnd in ("cold", "warm"):   # the second run starts warm
        for name, opts, want in cases:
            db, r = run(f"{name}-{rnd}", opts, ["phases"])
            if not db:
                continue
            if r.stdout != "parse\nemit\n":
                fail(f"{name}: the program's output changed: {r.stdout!r}")
            # the program's computing functions: callgrind gives PLT stubs
            # and start-up code to their neighbours (parse's tail call)
            got = {k: v for k, v in program_rows(db, "instrs").items() if k in COMPUTING}
            want = {k: v for k, v in want.items() if k in COMPUTING}
            if got != want:
                fail(f"{name} ({rnd}): Ir by function {got}, callgrind {want}")
            else:
                print(f"ok   {name} ({rnd}): {sum(got.values())} Ir in {len(got)} functions as callgrind")
            calls = program_rows(db, "calls")
            edges = {k: calls.get(k, 0) for k in ("parse", "emit")}
            expect = {"between": {"parse": 1, "emit": 0}, "until": {"parse": 1, "emit": 0},
                      "from": {"parse": 1, "emit": 1}}[name]
            if edges != expect:
                fail(f"{name} ({rnd}): the edge functions' calls {edges}, expected {expect}")
else:
    print("skip callgrind parts: no valgrind")

# 2. edges at events: tick() calls after the event, as the program says
for mode, opts, want, child in [("signal", ["--from", "signal:10"], 50, None),
                                ("signal", ["--from", "signal"], 50, None),
                                ("dlopen", ["--from", "dlopen"], 70, None),
                                ("fork", ["--from", "fork"], 40, 30),
                                ("exec", ["--from", "exec"], 25, None),
                                ("exec", ["--to", "exec"], 100, None),
                                ("dlopen", ["--to", "dlopen"], 100, None)]:
    name = f"{mode}{opts[0]}-{opts[1]}".replace(":", "")
    db, r = run(name, opts, [mode], collect="fcount")
    if not db:
        continue
    calls = program_rows(db, "calls").get("tick", 0)
    expect = want + (child or 0)
    if calls != expect:
        fail(f"{name}: tick() counted {calls} times, the program made {expect} after the edge")
    else:
        print(f"ok   {name}: tick() {calls} calls after the edge")

# 3. scope: --functions keeps only the named; --modules gives the same
# counts there as a run of everything
db, _ = run("functions", ["--functions", "phase_*,work"], ["phases"])
if db:
    got = program_rows(db, "calls")
    if got != {"phase_a": 2, "phase_b": 1, "work": 500}:
        fail(f"--functions phase_*,work: {got}")
    con = sqlite3.connect(db)
    names = {n for (n,) in con.execute("select name from function_report")}
    con.close()
    if names - {"phase_a", "phase_b", "work"}:
        fail(f"--functions: other functions in the profile: {sorted(names)[:10]}")
libc = "select name, calls from function_report where module like '%/libc.so%' and calls > 0"
db_all, _ = run("all", [], ["phases"], collect="fcount")
db_libc, _ = run("libc", ["--modules", "libc.so*"], ["phases"], collect="fcount")
if db_all and db_libc:
    a = dict(sqlite3.connect(db_all).execute(libc).fetchall())
    b = dict(sqlite3.connect(db_libc).execute(libc).fetchall())
    others = sqlite3.connect(db_libc).execute(
        "select count(*) from function_report where module not like '%/libc.so%'").fetchone()[0]
    if not a or a != b or others:
        fail(f"--modules libc.so*: {len(b)} libc functions ({others} others), a full run {len(a)}; "
             f"differing: {sorted(set(a.items()) ^ set(b.items()))[:6]}")
    else:
        print(f"ok   --modules libc.so*: {len(b)} functions, as in a full run")

# 4. a time span lies inside the run
db_t, _ = run("time", ["--from", "0.3s", "--to", "+0.3s"], ["loop"], collect="fcount")
db_f, _ = run("time-all", [], ["loop"], collect="fcount")
if db_t and db_f:
    t, f = program_rows(db_t, "calls").get("tick", 0), program_rows(db_f, "calls").get("tick", 0)
    if not 0 < t < f:
        fail(f"--from 0.3s --to +0.3s: {t} tick() calls of {f}")
    meta = dict(sqlite3.connect(db_t).execute("select key, value from meta").fetchall())
    if meta.get("span") != "0.3s..+0.3s":
        fail(f"meta span {meta.get('span')!r}")

# 5. bad edges: refused before the program runs
for opts, words in [(["--from", "soon"], "edge"), (["--to", "call:"], "edge"),
                    (["--from", "2s", "--to", "1s"], "not after"),
                    (["-c", "calltime", "--from", "call:parse"], "counts only")]:
    r = subprocess.run([reticle, "run", "-o", os.path.join(work, "bad.db")] + opts + ["--", prog, "phases"],
                       capture_output=True, text=True, timeout=60, env=env)
    if r.returncode != 2 or words not in r.stderr or "parse" in r.stdout:
        fail(f"{opts}: exit {r.returncode}, stderr {r.stderr.strip()!r}, stdout {r.stdout!r}")

print(f"{'FAILED' if fails else 'passed'}: {fails} failures")
sys.exit(1 if fails else 0)
