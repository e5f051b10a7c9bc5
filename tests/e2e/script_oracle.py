#!/usr/bin/env python3
"""reticle script: examples/scripts/ipc_change.lua on two runs of PROGRAM;
its rows (Ir per call in each run, the change) against the two profiles
read with sqlite3 from runs made here the same way; the API calls every
function of the module from a script of its own (run, open, totals,
functions, meta, report to a string and to a file, diff, merge, close);
errors: a script that does not exist (2), a syntax error and a runtime
error (1, with the file and line), a closed profile used.

usage: script_oracle.py RETICLE WORKDIR SCRIPT PROGRAM ARG_A ARG_B"""
import os, re, shutil, sqlite3, subprocess, sys, time

reticle, work, script, prog, arg_a, arg_b = sys.argv[1:7]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), TMPDIR=work)
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def per_call(db):
    con = sqlite3.connect(db)
    return {(os.path.basename(m), n): i / c for m, n, c, i in con.execute(
        "SELECT m.path, f.name, f.calls, f.instrs FROM functions f JOIN modules m ON m.id = f.module"
        " WHERE f.calls > 0 AND f.instrs IS NOT NULL")}


# without address randomization: ld.so's counts vary with where strings land
r = subprocess.run(["setarch", "-R", reticle, "script", script, f"{prog} {arg_a}", f"{prog} {arg_b}", "0"],
                   capture_output=True, text=True, env=env, timeout=300)
if r.returncode:
    fail(f"ipc_change.lua: {r.returncode} {r.stderr}")
# the oracle: the same two runs, read directly (the counts are exact)
a, b = os.path.join(work, "a.db"), os.path.join(work, "b.db")
for db, arg in ((a, arg_a), (b, arg_b)):
    subprocess.run(["setarch", "-R", reticle, "run", "-c", "fcount,bbcount", "-o", db, "--", prog, arg],
                   capture_output=True, env=env)
pa, pb = per_call(a), per_call(b)
rows = 0
lines = r.stdout.splitlines()
head = [k for k, l in enumerate(lines) if l.split()[:2] == ["Ir/call", "A"]]
for line in lines[head[0] + 1 if head else len(lines):]:   # the programs' own output comes first
    m = re.match(r"\s*([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)%\s+(.+) \((\S+)\)$", line)
    if not m:
        fail(f"unreadable row {line!r}")
        continue
    key = (m.group(5), m.group(4))
    if key not in pa or key not in pb:
        fail(f"{key}: not called in both runs")
        continue
    for got, want in ((float(m.group(1)), pa[key]), (float(m.group(2)), pb[key])):
        if abs(got - want) > 0.051:
            fail(f"{key}: Ir/call {got}, the profiles {want:.1f}")
    rows += 1
want_rows = len(set(pa) & set(pb))
if rows != want_rows:
    fail(f"{rows} rows, {want_rows} functions called in both runs")
print(f"ipc_change.lua: {rows} rows checked")

api = os.path.join(work, "api.lua")
open(api, "w").write(f'''
local status = reticle.run{{ program = {{ "{prog}", "{arg_a}" }}, collect = "fcount,bbcount", output = "{work}/s1.db" }}
assert(status == 0, "status " .. status)
assert(reticle.run{{ program = "{prog}", collect = {{ "fcount" }}, output = "{work}/s2.db", cold = true }} == 0)
local p, q = reticle.open("{work}/s1.db"), reticle.open("{work}/s2.db")
local t = p:totals()
assert(t.instrs > 0 and t.calls > 0 and t.functions >= t.counted, "totals")
local fs = p:functions()
assert(#fs == t.counted and fs[1].instrs >= fs[#fs].instrs, "functions by Ir")
assert(#p:functions(true) == t.functions, "functions(all)")
assert(p:meta("collectors") == "fcount,bbcount" and p:meta("nothing") == nil, "meta")
assert(p:report("text"):find("main"), "report text")
assert(p:report("json", "{work}/r.json") == true and io.open("{work}/r.json"):read("a"):find("schema_version"), "report file")
assert(reticle.diff(p, q, 5):find("B/A"), "diff")
assert(reticle.merge("{work}/m.db", {{ "{work}/s1.db", "{work}/s2.db" }}) == true, "merge")
local m = reticle.open("{work}/m.db")
assert(m:totals().processes == 2, "merged processes")
m:close()
p:close()
local ok, err = pcall(function() return p:totals() end)
assert(not ok and err:find("closed"), "closed profile")
local ok2, err2 = pcall(reticle.open, "{work}/none.db")
assert(not ok2 and err2:find("none.db"), "open of a missing profile")
print("api ok", reticle.version)
''')
r = subprocess.run([reticle, "script", api], capture_output=True, text=True, env=env, timeout=300)
if r.returncode or "api ok" not in r.stdout:
    fail(f"api.lua: {r.returncode} {r.stdout} {r.stderr}")
for name, text, status, where in (("syntax.lua", "x = = 1\n", 2, "syntax.lua:1:"),
                                  ("runtime.lua", "local x = 1\nerror('boom')\n", 1, "runtime.lua:2: boom")):
    path = os.path.join(work, name)
    open(path, "w").write(text)
    r = subprocess.run([reticle, "script", path], capture_output=True, text=True)
    if r.returncode != status or where not in r.stderr or len(r.stderr.splitlines()) != 1:
        fail(f"{name}: status {r.returncode}, {r.stderr!r}")
# an error after attaching: said with its line, and the target left as it was
# (it runs on and ends well; armed entries left behind would kill it with SIGTRAP)
target = subprocess.Popen(["sleep", "1.5"])
time.sleep(0.3)
path = os.path.join(work, "attached.lua")
open(path, "w").write(f"""local s = reticle.session_create{{ collectors = {{ "fcount" }}, output = "{work}/att.db" }}
reticle.session_attach(s, {target.pid}, 0)
error("after the attach")
""")
r = subprocess.run([reticle, "script", path], capture_output=True, text=True, timeout=60)
if r.returncode != 1 or "attached.lua:3: after the attach" not in r.stderr:
    fail(f"an error after an attach: status {r.returncode}, {r.stderr!r}")
if target.wait(timeout=30) != 0:
    fail(f"the attached process was not left as it was: status {target.returncode}")
r = subprocess.run([reticle, "script", os.path.join(work, "none.lua")], capture_output=True, text=True)
if r.returncode != 2 or "none.lua" not in r.stderr:
    fail(f"missing script: {r.returncode} {r.stderr}")
print(f"{fails} failures")
sys.exit(1 if fails else 0)
