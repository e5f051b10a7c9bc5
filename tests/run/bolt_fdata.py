#!/usr/bin/env python3
"""reticle report --format fdata: BOLT's profile from exact counts.

Runs PROGRAM (built with --emit-relocs) under reticle with edges, bbcount
and callgraph, writes its fdata, and has llvm-bolt optimize PROGRAM with
it. BOLT itself is the oracle of the profile's form: every function named
in the fdata must be one BOLT knows (no profile ignored), none may have a
profile BOLT finds invalid for its control-flow graph (stale), and BOLT
must count as profiled at least every function the fdata has records from
(a function only called, with no branch of its own, may not count). The optimized
program must print what the original prints, and BOLT must have changed
some function's layout. Skipped (77) without llvm-bolt.

usage: bolt_fdata.py RETICLE WORKDIR -- PROGRAM ARGS..."""
import os, re, shutil, subprocess, sys


def bolt_binary():
    for name in ("llvm-bolt-16", "llvm-bolt", "llvm-bolt-17", "llvm-bolt-15"):
        path = shutil.which(name)
        if path:
            return path
    return None


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    bolt = bolt_binary()
    if not bolt:
        print("skip: no llvm-bolt (Debian's bolt-16)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    native = subprocess.run(prog, capture_output=True)
    db, fdata = os.path.join(work, "p.db"), os.path.join(work, "prog.fdata")
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    r = subprocess.run([reticle, "run", "-c", "edges,bbcount,callgraph", "-o", db, "--"] + prog,
                       capture_output=True, env=env)
    if r.returncode != native.returncode or r.stdout != native.stdout:
        print(f"FAIL: under reticle, output or status differs from native\n{r.stderr.decode()}")
        return 1
    rep = subprocess.run([reticle, "report", "-f", "fdata", "-o", fdata, db], capture_output=True, text=True)
    if rep.returncode:
        print(f"FAIL: report --format fdata: {rep.stderr.strip()}")
        return 1
    records = [l.split() for l in open(fdata)]
    bad = [l for l in records if len(l) != 8 or l[0] != "1" or l[3] != "1" or l[6] != "0"]
    named = {l[1] for l in records} | {l[4] for l in records}
    sources = {l[1] for l in records}
    branches = sum(1 for l in records if l[1] == l[4])
    print(f"fdata: {len(records)} records ({branches} inside functions), {len(named)} functions named")
    if bad or not records:
        print(f"FAIL: malformed records {bad[:3]}")
        return 1
    out = os.path.join(work, "prog.bolt")
    b = subprocess.run([bolt, prog[0], "-o", out, "-data=" + fdata, "-reorder-blocks=ext-tsp",
                        "-reorder-functions=hfsort", "-split-functions", "-split-all-cold",
                        "-dyno-stats"], capture_output=True, text=True)
    log = b.stdout + b.stderr
    fails = 0
    if b.returncode:
        print(f"FAIL: llvm-bolt exited {b.returncode}\n{log[-2000:]}")
        return 1
    m = re.search(r"BOLT-INFO: (\d+) out of (\d+) functions in the binary .* have non-empty execution profile", log)
    profiled = int(m.group(1)) if m else 0
    ignored = re.search(r"profile for (\d+) objects was ignored", log)
    stale = re.search(r"(\d+) \([\d.]+% of all profiled\) functions? ha(ve|s) invalid", log)
    layout = re.search(r"basic block reordering modified layout of (\d+) functions", log)
    checks = [
        (not ignored, f"every function named is one BOLT knows"
                      + (f" ({ignored.group(1)} ignored)" if ignored else "")),
        (not stale, "no profile BOLT finds invalid (stale) for its CFG"
                    + (f" ({stale.group(1)} functions)" if stale else "")),
        (profiled >= len(sources), f"BOLT profiled {profiled} functions, the fdata has records "
                                   f"from {len(sources)}"),
        (layout and int(layout.group(1)) > 0, "BOLT changed the layout of "
                                               f"{layout.group(1) if layout else 0} functions"),
    ]
    opt = subprocess.run([out] + prog[1:], capture_output=True)
    checks.append((opt.returncode == native.returncode and opt.stdout == native.stdout,
                   "the optimized program prints what the original prints"))
    for ok, what in checks:
        print(f"{'ok  ' if ok else 'FAIL'}: {what}")
        fails += not ok
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
