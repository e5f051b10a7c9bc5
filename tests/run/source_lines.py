#!/usr/bin/env python3
"""Source places in reports, checked against binutils and valgrind:

1. `reticle report` (text): the source column of every function of the
   program is addr2line's FILE:LINE (basename) for its entry; in the report
   of a stripped copy, the program's functions have none.
2. The callgrind export's per-line costs (bbcount's block counts spread on
   the lines of their instructions): `callgrind_annotate --auto=yes` reads
   it without warnings and prints for every line of SOURCE the same Ir as
   for valgrind's own `--tool=callgrind --dump-instr=no` run of PROGRAM.
3. `reticle annotate`: over the program's functions, the Ir it prints per
   line of SOURCE add up to callgrind's, and with --disasm the counts of
   each function's instructions add up to its Ir.

usage: source_lines.py RETICLE WORKDIR SOURCE -- PROGRAM ARGS..."""
import os, re, shutil, subprocess, sys

reticle, work, source = sys.argv[1:4]
prog = sys.argv[sys.argv.index("--") + 1:]
os.makedirs(work, exist_ok=True)
exe = os.path.realpath(prog[0])
ENV = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, env=ENV, **kw)
    if r.returncode:
        sys.exit(f"FAIL: {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def profile(program, name):
    db = os.path.join(work, name + ".db")
    run([reticle, "run", "-c", "fcount,bbcount", "-o", db, "--", program] + prog[1:])
    return db


def text_rows(report):
    """{address: source or None} of the rows of module MODULE."""
    lines = report.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("module "))
    has_source = lines[head].split()[-1] == "source"
    rows = {}
    for l in lines[head + 1:]:
        parts = re.split(r"\s{2,}", l.strip())
        if len(parts) < 3 or parts[0] != os.path.basename(exe):
            continue
        rows[int(parts[1], 16)] = parts[-1] if has_source and parts[-1] != "-" else None
    return has_source, rows


# --- 1. text report: FILE:LINE of each function's entry --------------------
db = profile(exe, "lines")
has_source, rows = text_rows(run([reticle, "report", "--top", "0", db]))
check(has_source, "the report of a program built with -g has a source column")
addrs = sorted(rows)
a2l = run(["addr2line", "-e", exe] + ["%x" % a for a in addrs]).splitlines()
for a, where in zip(addrs, a2l):
    where = re.sub(r" \(discriminator \d+\)$", "", where)
    want = None if where.startswith("??") or where.endswith(":?") else "%s:%s" % (os.path.basename(where.split(":")[0]),
                                                           where.split(":")[1])
    check(rows[a] == want, f"function at {a:#x}: reticle {rows[a]}, addr2line {want}")
print(f"{len(rows)} functions of {os.path.basename(exe)} placed as addr2line places them")
check(sum(1 for v in rows.values() if v) >= 5, "most functions have a place")
stripped = os.path.join(work, os.path.basename(exe) + ".stripped")
subprocess.run(["strip", "-o", stripped, exe], check=True)
exe_saved, exe = exe, os.path.realpath(stripped)
has_source, rows = text_rows(run([reticle, "report", "--top", "0", profile(stripped, "stripped")]))
check(rows and not any(rows.values()), "a stripped program's functions have no place: %s" % rows)
exe = exe_saved


# --- 2. per-line Ir in the callgrind export, as callgrind's ----------------
def annotated(cg_file):
    """{line: Ir} of SOURCE as callgrind_annotate --auto=yes prints it."""
    r = subprocess.run(["callgrind_annotate", "--auto=yes", "--show=Ir", "--threshold=100",
                        "--context=1000000", cg_file], capture_output=True, text=True)
    check(r.returncode == 0 and "WARNING" not in r.stderr + r.stdout,
          f"callgrind_annotate reads {cg_file} without warnings: {r.stderr}")
    out = r.stdout.splitlines()
    head = [i for i, l in enumerate(out) if l == "-- Auto-annotated source: " + source]
    check(len(head) == 1, f"callgrind_annotate annotates {source} in {cg_file}")
    if not head:
        return {}
    src = open(source).read().split("\n")
    counts, n = {}, 0
    for l in out[head[0] + 4:]:
        m = re.match(r"^\s*([\d,]+|\.)(?:\s+\(\s*[\d.]+%\))?\s+(=> )?", l)
        if n >= len(src) - 1 or not m:
            break
        if m.group(2):
            continue        # a call line, not a source line
        n += 1
        check(l.endswith(src[n - 1]), f"line {n} of the annotation is the source's: {l!r}")
        counts[n] = 0 if m.group(1) == "." else int(m.group(1).replace(",", ""))
    check(n == len(src) - 1, f"{cg_file}: {n} source lines annotated, the file has {len(src) - 1}")
    return counts


cg_ours = os.path.join(work, "reticle.callgrind")
run([reticle, "report", "--format", "callgrind", "-o", cg_ours, db])
cg_theirs = os.path.join(work, "valgrind.callgrind")
# --skip-plt=no: callgrind would otherwise charge PLT stubs to the lines
# calling them; reticle counts them in the stubs (name@plt), as the
# per-function oracle (callgrind_oracle.py) does
subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=no", "--skip-plt=no",
                "--callgrind-out-file=" + cg_theirs] + prog, capture_output=True, check=True)
ours, theirs = annotated(cg_ours), annotated(cg_theirs)
same = 0
for n in sorted(set(ours) | set(theirs)):
    if ours.get(n) == theirs.get(n):
        same += ours.get(n) != 0
    else:
        check(False, f"{os.path.basename(source)}:{n}: Ir reticle {ours.get(n)}, callgrind {theirs.get(n)}")
print(f"{same} lines with Ir in {os.path.basename(source)}: equal to callgrind's")
check(same >= 20, "many lines compared")

# --- 3. reticle annotate ------------------------------------------------------
import json
rep = json.loads(run([reticle, "report", "--format", "json", db]))["functions"]
mine = [f for f in rep if os.path.realpath(f["module"]) == exe and f.get("instrs")]
per_line = {}
for f in mine:
    out = run([reticle, "annotate", db, f["name"]]).splitlines()
    in_source = False
    for l in out:
        if l.startswith("-- "):
            in_source = l == "-- " + source
            continue
        m = re.match(r"^\s*(\d+|\.)\s+(\d+)  ", l)
        if in_source and m and m.group(1) != ".":
            n = int(m.group(2))
            per_line[n] = per_line.get(n, 0) + int(m.group(1))
    dis = run([reticle, "annotate", "--disasm", db, f["name"]]).splitlines()
    total = sum(int(m.group(1)) for l in dis for m in [re.match(r"^\s*(\d+)\s+[0-9a-f]+:  ", l)] if m)
    check(total == f["instrs"], f"annotate --disasm {f['name']}: counts add up to {total}, Ir {f['instrs']}")
want = {n: c for n, c in theirs.items() if c}
check(per_line == want, f"annotate's per-line Ir of {os.path.basename(source)} equal callgrind's: "
      f"{sorted(set(per_line.items()) ^ set(want.items()))}")
print(f"annotate: {len(mine)} functions, {len(per_line)} lines")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("ok")
