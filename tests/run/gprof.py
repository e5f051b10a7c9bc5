#!/usr/bin/env python3
"""A program built with -pg under reticle: gprof's call graph (the arcs
mcount records from return addresses, which it keeps only inside the
program's text) is the native run's. With code-cache return addresses
every arc was dropped ("gmon.out file is missing call-graph data"); such
a program now runs with original return addresses (docs/engine.md).
Oracle: the native run's gmon.out, read by gprof; the arcs' counts
(caller, callee, calls), not the sampled times.

usage: gprof.py RETICLE WORKDIR PROGRAM   (exit 77 without gprof)"""
import os, re, shutil, subprocess, sys

reticle, work, prog = sys.argv[1:4]
gprof = shutil.which("gprof")
if not gprof:
    print("gprof not installed: skipped")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
fails = 0


def arcs(d):
    """(caller, callee, count) of gprof's call graph from D/gmon.out."""
    out = subprocess.run([gprof, "-b", "-q", prog, os.path.join(d, "gmon.out")],
                         capture_output=True, text=True, timeout=60)
    if out.returncode or "missing call-graph" in out.stderr:
        return None, out.stderr.strip()
    got, primary, parents = set(), None, []
    for line in out.stdout.splitlines():
        if line.startswith("----"):
            primary, parents = None, []
            continue
        m = re.match(r"^\[\d+\].*?\s(\S+) \[\d+\]$", line)
        if m:
            primary = m.group(1)
            for name, count in parents:
                got.add((name, primary, count))
            continue
        m = re.match(r"^\s+[\d.\s]*?(\d+(?:\+\d+)?(?:/\d+)?)\s+(\S+) \[\d+\]$", line)
        if m:
            if primary is None:
                parents.append((m.group(2), m.group(1)))
            else:
                got.add((primary, m.group(2), m.group(1)))
    return got, out.stdout


def run(tag, cmd):
    d = os.path.join(work, tag)
    os.makedirs(d)
    r = subprocess.run(cmd, cwd=d, capture_output=True, text=True, env=env, timeout=120)
    return r, d


native, nd = run("native", [prog])
want, text = arcs(nd)
if not want:
    print(f"the native run gave no call graph: {text}")
    sys.exit(1)
for c in ("fcount", "bbcount"):
    for n in ("cold", "warm"):
        tag = f"{c}-{n}"
        r, d = run(tag, [reticle, "run", "-c", c, "-o", os.path.join(work, f"{tag}.db"), "--", prog])
        if r.returncode != native.returncode or r.stdout != native.stdout:
            fail = f"exit {r.returncode}, stdout {r.stdout!r} (native {native.stdout!r})"
        else:
            got, text = arcs(d)
            fail = None if got == want else \
                f"arcs {sorted(got) if got else text}, natively {sorted(want)}"
        if fail:
            fails += 1
            print(f"FAIL {tag}: {fail}")
        else:
            print(f"{tag}: {len(want)} arcs as natively")
print(f"{4 - fails} passed, {fails} failed")
sys.exit(1 if fails else 0)
