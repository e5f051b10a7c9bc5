#!/usr/bin/env python3
"""A library loaded, unloaded and loaded again (tests/run/programs/
dlopen.c: plugin_square called 1000 times in each of two loads, 2000 as
the program says) is one module of its process in the report: its
functions are listed once with every load's counts added up, in the
text report, the JSON export, the Callgrind export and with --process 1.
Before, a one-image profile listed a row per load (1000 calls each) and
only profiles of several processes were merged by module path.

usage: report_reloads.py RETICLE WORKDIR PROGRAM PLUGIN"""
import json, os, re, subprocess, sys
from checks import Checks

reticle, work, prog, plugin = sys.argv[1:5]
t = Checks(work)
env, fail = t.env, t.fail


native = subprocess.run([prog, plugin], capture_output=True, text=True, timeout=60)
want = int(re.search(r"plugin_square calls (\d+)", native.stdout).group(1))
db = os.path.join(work, "p.db")
r = subprocess.run([reticle, "run", "-c", "fcount,bbcount", "-o", db, "--", prog, plugin],
                   capture_output=True, text=True, env=env, timeout=120)
if r.returncode != native.returncode or r.stdout != native.stdout:
    fail(f"run: exit {r.returncode}, stdout {r.stdout!r} (native {native.stdout!r})")


def report(*args):
    return subprocess.run([reticle, "report", *args, db], capture_output=True, text=True,
                          timeout=60).stdout


for args in ([], ["--process", "1"]):
    rows = [l.split() for l in report("--top", "0", *args).splitlines() if " plugin_square " in l]
    calls = [int(row[3]) for row in rows]
    if calls != [want]:
        fail(f"text report {args}: plugin_square rows' calls {calls}, not [{want}]")
    else:
        print(f"text report {args}: plugin_square once, {want} calls")

j = json.loads(report("--format", "json", "--top", "0"))
fns = [f for f in j["functions"] if f["name"] == "plugin_square"]
mods = [m for m in j["modules"] if os.path.basename(m["path"]) == os.path.basename(plugin)]
if [f["calls"] for f in fns] != [want] or len(mods) != 1:
    fail(f"json: plugin_square {[(f['calls'], f['instrs']) for f in fns]}, {len(mods)} plugin modules")
elif fns[0]["instrs"] % want or not fns[0]["instrs"]:
    fail(f"json: plugin_square's {fns[0]['instrs']} instructions are not {want} equal calls'")

cg = os.path.join(work, "p.callgrind")
subprocess.run([reticle, "report", "--format", "callgrind", "-o", cg, db], timeout=60)
n = sum(1 for l in open(cg) if re.match(r"fn=\(\d+\) plugin_square$", l.strip()))
if n != 1:
    fail(f"callgrind export: plugin_square named {n} times, not once")

t.done()
