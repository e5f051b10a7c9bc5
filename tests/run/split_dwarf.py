#!/usr/bin/env python3
"""Split DWARF (-gsplit-dwarf): a program whose debug information is in a
.dwo beside its objects. With the .dwo, `reticle report --inline` gives the
same Ir per inlined function as for a build of the same source without
split DWARF (whose rows run.inline_ir checks against addr2line; valgrind
cannot read split DWARF); without it (moved away), the run, the text
report with --inline, `functions`, the callgrind export and annotate
still work and exit 0, with names from .symtab and places from the
skeleton's line table.

usage: split_dwarf.py RETICLE WORKDIR SPLIT_PROGRAM PLAIN_PROGRAM ARG"""
import os, re, shutil, subprocess, sys

reticle, work, split, plain, arg = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def run(args):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)


def inlined(prog, tag):
    db = os.path.join(work, tag + ".db")
    r = run([reticle, "run", "-c", "bbcount", "-o", db, "--", prog, arg])
    if r.returncode:
        fail(f"{tag}: run exit {r.returncode}: {r.stderr}")
        return {}, db
    rep = run([reticle, "report", "--inline", "--top", "0", "--no-demangle", db])
    if rep.returncode:
        fail(f"{tag}: report --inline exit {rep.returncode}: {rep.stderr}")
    rows = {}
    for m in re.finditer(r"^\s*(\d+)\s+[\d.]+%\s+(\S+) \((\S+)\) <- ", rep.stdout, re.M):
        if m.group(3) == os.path.basename(prog):
            rows[m.group(2)] = int(m.group(1))
    return rows, db


info = subprocess.run(["readelf", "--debug-dump=info", split], capture_output=True, text=True).stdout
dwo = re.search(r"DW_AT_dwo_name\s*: \(indirect string, offset: \w+\): (\S+)", info)
comp = re.search(r"DW_AT_comp_dir\s*: \(indirect string, offset: \w+\): (\S+)", info)
if not dwo or not comp:
    print("FAIL: the program has no split unit")
    sys.exit(1)
dwo_path = os.path.join(comp.group(1), dwo.group(1))
want, _ = inlined(plain, "plain")
got, _ = inlined(split, "split")
if not want or got != want:
    fail(f"split DWARF: inlined rows {got}, the plain build's {want}")
print(f"with the .dwo: {len(got)} inlined functions as the plain build's")

hidden = dwo_path + ".hidden"
os.rename(dwo_path, hidden)
try:
    rows, db = inlined(split, "nodwo")
    if rows:
        fail(f"without the .dwo: inlined rows {rows}")
    for what, args in (("report", [reticle, "report", db]),
                       ("functions", [reticle, "functions", split]),
                       ("callgrind", [reticle, "report", "-f", "callgrind", "-o", os.path.join(work, "cg"), db]),
                       ("annotate", [reticle, "annotate", db, "main"])):
        r = run(args)
        if r.returncode:
            fail(f"without the .dwo: {what} exit {r.returncode}: {r.stderr}")
        elif what == "report" and not re.search(r"digits_then_mix\s.*inlines\.c:\d+", r.stdout):
            fail("without the .dwo: the report has no place for digits_then_mix")
        elif what == "functions" and "digits_then_mix" not in r.stdout:
            fail("without the .dwo: functions does not name digits_then_mix")
finally:
    os.rename(hidden, dwo_path)
print(f"{fails} failures")
sys.exit(1 if fails else 0)
