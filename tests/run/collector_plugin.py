#!/usr/bin/env python3
"""reticle run --collector: a collector built outside the tree.

The example plug-in (examples/collectors/branch_bias.c) writes, per
conditional branch, its executions and the executions that went against
its majority direction. Run beside the built-in edges collector (checked
against callgrind by run.edges_exact), the sums per function must equal
what the edges rows of the same run give, cold and warm; with min=N only
branches run N times or more count. Plug-ins with one fault each are
refused before the program starts: status 2, one line saying what is wrong.

usage: collector_plugin.py RETICLE WORKDIR BRANCH_BIAS_SO FAULT=SO... -- PROGRAM ARGS..."""
import json, os, shutil, sqlite3, subprocess, sys


def sums(db, min_runs=1, module=None):
    """({function key: (executions, against)} from the metrics, the same from
    the branches) of profile DB; function key = (module path, address)."""
    con = sqlite3.connect(db)
    key = ("SELECT m.path, f.addr FROM functions f JOIN modules m ON m.id = f.module"
           " WHERE f.id = ?")
    got, want = {}, {}
    for fid, name, value in con.execute("SELECT function, name, value FROM metrics"):
        k = con.execute(key, (fid,)).fetchone()
        e, a = got.get(k, (0, 0))
        got[k] = (e + value, a) if name == "executions" else (e, a + value)
    if con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'branches'").fetchone()[0]:
        for fid, t, n in con.execute("SELECT function, taken, not_taken FROM branches"):
            if t + n < min_runs:
                continue
            k = con.execute(key, (fid,)).fetchone()
            e, a = want.get(k, (0, 0))
            want[k] = (e + t + n, a + min(t, n))
    con.close()
    if module:
        got = {k: v for k, v in got.items() if os.path.realpath(k[0]) == module}
        want = {k: v for k, v in want.items() if os.path.realpath(k[0]) == module}
    return got, want


def main():
    reticle, work, bias = sys.argv[1:4]
    cut = sys.argv.index("--")
    faults = dict(a.split("=", 1) for a in sys.argv[4:cut])
    prog = sys.argv[cut + 1:]
    exe = os.path.realpath(prog[0])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    native = subprocess.run(prog, capture_output=True)
    cache = os.path.join(work, "cache")
    env = dict(os.environ, RETICLE_CACHE_DIR=cache)
    fails = 0

    def run(args, db):
        r = subprocess.run([reticle, "run"] + args + ["-o", db, "--"] + prog, capture_output=True, env=env)
        if r.returncode != native.returncode or r.stdout != native.stdout:
            print(f"FAIL: reticle run {' '.join(args)}: output or status {r.returncode} differs from native "
                  f"{native.returncode}\n{r.stderr.decode(errors='replace')}")
            return False
        return True

    # beside edges, cold then warm: every function's sums from both agree
    edges_db = None
    for tag in ("cold", "warm"):
        db = os.path.join(work, f"bias-{tag}.db")
        if not run(["-c", "edges", "--collector", bias], db):
            fails += 1
            continue
        got, want = sums(db)
        bad = [k for k in set(got) | set(want) if got.get(k) != want.get(k)]
        for k in sorted(bad)[:10]:
            print(f"FAIL [{tag}]: {os.path.basename(k[0])} {k[1]:#x}: plug-in {got.get(k)}, edges {want.get(k)}")
        print(f"{'ok  ' if not bad else 'FAIL'} [{tag}]: {len(want)} functions with branches, "
              f"{len(got)} with the plug-in's measures, {len(bad)} differ")
        fails += bool(bad) or not want
        edges_db = db

    # alone, with an argument: only branches run min=N times or more
    db = os.path.join(work, "bias-min.db")
    if edges_db and run(["--collector", bias + ":min=50"], db):
        got, _ = sums(db, module=exe)
        _, want = sums(edges_db, 50, module=exe)
        ok = got == want and want
        print(f"{'ok  ' if ok else 'FAIL'} [min=50, alone]: {len(want)} functions of the program "
              f"expected, {len(got)} written")
        if not ok:
            print(f"  plug-in {sorted(got.items())[:5]}\n  edges   {sorted(want.items())[:5]}")
        fails += not ok
        text = subprocess.run([reticle, "report", db], capture_output=True, text=True).stdout
        doc = json.loads(subprocess.run([reticle, "report", "-f", "json", db], capture_output=True,
                                        text=True).stdout)
        rows = sqlite3.connect(db).execute("SELECT count(*) FROM metrics").fetchone()[0]
        ok = "metric against_majority" in text and "metric executions" in text and len(doc["metrics"]) == rows
        print(f"{'ok  ' if ok else 'FAIL'} [report]: text has both metric tables, json {len(doc['metrics'])} "
              f"of {rows} metric rows")
        fails += not ok
    else:
        fails += 1

    # refused before the program starts
    marker = os.path.join(work, "ran")
    text = os.path.join(work, "not-a-library.so")
    with open(text, "w") as f:
        f.write("not a shared object\n")
    cases = [
        ([os.path.join(work, "missing.so")], "cannot load collector"),
        ([text], "cannot load collector"),
        ([faults["unsupported"]], "does not implement"),
        ([faults["no_point"]], "no such point"),
        ([faults["timers"]], "does not set timers"),
        ([faults["no_entry"]], "defines no rtl_collector_entry"),
        ([faults["refuse"]], "refused to start"),
        ([faults["good"] + ":x"], "refused its arguments 'x'"),
        ([faults["name"]], "as a built-in collector is"),
        ([faults["good"], faults["good"]], "two collectors are named"),
        ([bias + ":min=z"], "refused its arguments"),
    ]
    for sos, pat in cases:
        args = [a for so in sos for a in ("--collector", so)]
        r = subprocess.run([reticle, "run"] + args + ["-o", os.path.join(work, "x.db"), "--", "sh", "-c",
                                                      f"echo > {marker}"], capture_output=True, text=True)
        lines = [l for l in r.stderr.splitlines() if l.startswith("reticle:")]
        ok = r.returncode == 2 and len(lines) == 1 and pat in lines[0] and not os.path.exists(marker)
        print(f"{'ok  ' if ok else 'FAIL'} [refused] {os.path.basename(sos[-1])}: status {r.returncode}: "
              f"{r.stderr.strip()}")
        fails += not ok
        if os.path.exists(marker):
            os.unlink(marker)
    print(f"{'ok' if not fails else 'FAIL'}: {fails} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
