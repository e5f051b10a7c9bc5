#!/usr/bin/env python3
"""Demangled names equal c++filt's (binutils, the independent oracle):

1. `reticle functions` on a real C++ library (Debian's libstdc++): for every
   function, the name printed equals c++filt's reading of the symbol's name,
   and that symbol name is one nm -D gives the address; --no-demangle prints
   the symbol's name.
2. A C++ program run under reticle: every function of the program in
   `reticle report` (text) and in the callgrind export (fn=) is c++filt's
   name for the profile's symbol name; --no-demangle keeps them.

usage: demangle.py RETICLE WORKDIR LIBRARY -- PROGRAM ARGS..."""
import collections, json, os, re, subprocess, sys

reticle, work, library = sys.argv[1:4]
prog = sys.argv[sys.argv.index("--") + 1:]
os.makedirs(work, exist_ok=True)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        if len(failures) <= 20:
            print("FAIL: " + what)


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def cxxfilt(names):
    """c++filt's reading of each name (stdin mode: words split at '@' as
    in name@plt)."""
    out = run(["c++filt"], input="".join(n + "\n" for n in names)).split("\n")
    return dict(zip(names, out))


# --- 1. reticle functions over libstdc++ ------------------------------------
by_addr = collections.defaultdict(set)
for line in run(["nm", "-D", "--defined-only", library]).splitlines():
    parts = line.split()
    if len(parts) == 3:
        by_addr[int(parts[0], 16)].add(parts[2].split("@")[0])
fns = json.loads(run([reticle, "functions", "--format", "json", library]))["functions"]
text = run([reticle, "functions", library]).splitlines()[1:-1]
raw_text = run([reticle, "functions", "--no-demangle", library]).splitlines()[1:-1]
check(len(text) == len(fns) == len(raw_text), "one text line per function")
expect = cxxfilt([f["name"] for f in fns])
mangled = 0
for f, line, raw in zip(fns, text, raw_text):
    name, want = f["name"], expect[f["name"]]
    if "dynsym" in f["sources"]:
        check(name in by_addr.get(f["addr"], ()),
              f"{name} at {f['addr']:#x} is a name nm -D gives that address")
    mangled += want != name
    check(line.endswith("  " + want), f"functions prints {want!r}: {line!r}")
    check(raw.endswith("  " + name), f"--no-demangle prints {name!r}: {raw!r}")
    check(f.get("demangled", name) == want, f"json demangled {f.get('demangled')!r} is {want!r}")
print(f"{library}: {len(fns)} functions, {mangled} demangled as c++filt does")
check(mangled > 1000, f"libstdc++ has many mangled names ({mangled})")

# --- 2. reports of a C++ program --------------------------------------------
db = os.path.join(work, "names.db")
run([reticle, "run", "-c", "fcount,bbcount", "-o", db, "--"] + prog,
    env=dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache")))
exe = os.path.realpath(prog[0])
rows = json.loads(run([reticle, "report", "--format", "json", db]))["functions"]
mine = [r for r in rows if os.path.realpath(r["module"]) == exe and r.get("name")]
expect = cxxfilt([r["name"] for r in rows if r.get("name")])
report = run([reticle, "report", "--top", "0", db])
raw_report = run([reticle, "report", "--top", "0", "--no-demangle", db])
cg = run([reticle, "report", "--format", "callgrind", db])
raw_cg = run([reticle, "report", "--format", "callgrind", "--no-demangle", db])
cg_names = set(re.findall(r"^c?fn=\(\d+\) (.*)$", cg, re.M))
raw_cg_names = set(re.findall(r"^c?fn=\(\d+\) (.*)$", raw_cg, re.M))
cpp = 0
for r in rows:
    # (the JSON also lists uncounted functions that call sites name, such
    # as ld.so's _dl_debug_state; the text report lists those counted)
    if not r.get("name") or not (r.get("calls") or r.get("instrs")):
        continue
    name, want = r["name"], expect[r["name"]]
    cpp += r in mine and want != name
    check(re.search(r"0x%x  %s\s" % (int(r["address"], 16), re.escape(want)), report),
          f"report names {r['address']} {want!r}")
    check(re.search(r"0x%x  %s\s" % (int(r["address"], 16), re.escape(name)), raw_report),
          f"report --no-demangle names {r['address']} {name!r}")
    check(want in cg_names, f"callgrind fn= {want!r}")
    check(name in raw_cg_names, f"callgrind --no-demangle fn= {name!r}")
print(f"{prog[0]}: {len(rows)} functions reported, {cpp} of the program's demangled")
check(cpp >= 5, "the program's C++ functions are demangled")
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("ok")
