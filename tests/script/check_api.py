#!/usr/bin/env python3
"""Every public C entry (RTL_API in include/reticle/*.h) is reachable from
Lua as reticle.NAME (rtl_NAME) and called by a part script api_*.lua,
which check what the entries return.
usage: check_api.py RETICLE SOURCE BUILD WORK"""
import glob, os, re, shutil, subprocess, sys

reticle, source, build, work = sys.argv[1:5]
here = os.path.dirname(os.path.abspath(__file__))
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

entries = set()
for h in glob.glob(os.path.join(source, "include/reticle/*.h")):
    text = open(h).read()
    for m in re.finditer(r"RTL_API\b[^;{(]*?\b(rtl_\w+)\s*\(", text, re.S):
        entries.add(m.group(1)[len("rtl_"):])
if len(entries) < 150:
    sys.exit(f"FAIL: only {len(entries)} entries found in the headers: the parser is wrong")

parts = sorted(glob.glob(os.path.join(here, "api_*.lua")))
out = os.path.join(work, "called.txt")
r = subprocess.run([reticle, "script", os.path.join(here, "api.lua"), work, source, build, out] + parts,
                   capture_output=True, text=True, timeout=500)
sys.stdout.write(r.stdout)
sys.stderr.write(r.stderr)
has, called = set(), set()
if os.path.exists(out):
    for line in open(out):
        kind, name = line.split()
        (has if kind == "has" else called).add(name)
missing = sorted(entries - has)
uncalled = sorted(entries - called - set(missing))
if missing:
    print(f"FAIL: {len(missing)} entries not in the module: {' '.join(missing)}")
if uncalled:
    print(f"FAIL: {len(uncalled)} entries no part script calls: {' '.join(uncalled)}")
print(f"{len(entries)} entries, {len(entries) - len(missing)} in the module, "
      f"{len(entries & called)} called, part scripts exit {r.returncode}")
sys.exit(1 if missing or uncalled or r.returncode else 0)
