#!/usr/bin/env python3
"""reticle report on profiles with known rows (written by mkprofile through
the API): text rows, JSON rows, and the Callgrind export as read by
callgrind_annotate, with and without --inclusive=yes.

usage: report_synthetic.py RETICLE MKPROFILE WORKDIR"""
import json
import os
import re
import sys
from cgutil import annotate, annotate_callers, check, done, run

reticle, mkprofile, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)

# The rows. Inclusive costs below follow from them by hand: every function
# but rec has a single caller, so gprof's estimate is exact there; rec is
# recursive (5 entries from main, 45 from itself), so its whole cost goes to
# main's call and its recursive call carries none.
SPEC = """\
meta command /usr/bin/demo --fast input.txt
meta pid 4242
meta exit_status 0
meta collectors fcount,bbcount
module exe /usr/bin/demo 0x555555554000
module lib /usr/lib/libdemo.so.1 0x7ffff7dd0000
function main exe 0x1100 0x40 calls=1 instrs=100
function work exe 0x1200 0x80 calls=10 instrs=5000
function helper exe 0x1300 0x20 calls=30 instrs=600
function rec exe 0x1400 0x30 calls=50 instrs=2500
function skipped exe 0x1500 0x3 skip=too-short-to-patch
function leaf lib 0x5000 0x40 calls=40 instrs=1200
function anon lib 0x6000 0x10 noname calls=2 instrs=20
function odd exe 0x1600 0x10 name=weird%20%22name%22%09x calls=3 instrs=9
function bad exe 0x1700 0x10 name=bad%ffname calls=1 instrs=1
block main 0x1100 10 1
block main 0x1120 5 18
block work 0x1200 20 10
block work 0x1240 12 400
block leaf 0x5000 30 40
block helper 0x1300 7 1
call main 0x1110 work 10
call main 0x1118 rec 5
call work 0x1210 helper 30
call work 0x1220 leaf 40
call rec 0x1410 rec 45
"""
# name: (module basename, address, calls, Ir)
ROWS = {
    "work": ("demo", 0x1200, 10, 5000),
    "rec": ("demo", 0x1400, 50, 2500),
    "leaf": ("libdemo.so.1", 0x5000, 40, 1200),
    "helper": ("demo", 0x1300, 30, 600),
    "main": ("demo", 0x1100, 1, 100),
    "sub_6000": ("libdemo.so.1", 0x6000, 2, 20),
    'weird "name"\tx': ("demo", 0x1600, 3, 9),
    "bad\ufffdname": ("demo", 0x1700, 1, 1),  # not UTF-8: U+FFFD in JSON
}
TOTAL_IR = 9430
TOTAL_CALLS = 137
INCLUSIVE = {  # Ir, Calls
    "main": [100 + 5000 + 600 + 1200 + 2500, 1 + 10 + 30 + 40 + 50],
    "work": [5000 + 600 + 1200, 10 + 30 + 40],
    "rec": [2500, 50], "leaf": [1200, 40], "helper": [600, 30], "sub_6000": [20, 2],
}
ARCS = {("main", "work"): 10, ("main", "rec"): 5, ("work", "helper"): 30,
        ("work", "leaf"): 40, ("rec", "rec"): 45}


def make(name, spec):
    path = os.path.join(work, name)
    with open(path + ".spec", "w") as f:
        f.write(spec)
    if os.path.exists(path + ".db"):
        os.unlink(path + ".db")
    r = run([mkprofile, path + ".spec", path + ".db"])
    check(r.returncode == 0, "mkprofile %s: %s" % (name, r.stderr))
    return path + ".db"


def report(*args):
    r = run([reticle, "report"] + list(args))
    check(r.returncode == 0 and not r.stderr, "report %s: rc %d %s" % (args, r.returncode, r.stderr))
    return r.stdout


def text_rows(out):
    """Rows of the text table: {name: (module, address, [counts...])}."""
    lines = out.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("module "))
    rows = {}
    for l in lines[head + 1:]:
        if l.startswith("(") or not l.strip():   # the table's end: a note, or the next section
            break
        parts = re.split(r"\s{2,}", l.strip())
        nums = [int(x) for x in parts[3:] if re.fullmatch(r"\d+", x)]
        rows[parts[2]] = (parts[0], int(parts[1], 16), nums)
    return lines[head], rows


def test_text(db):
    out = report(db)
    for key, val in [("command", "/usr/bin/demo --fast input.txt"), ("pid", "4242"),
                     ("exit status", "0"), ("collectors", "fcount,bbcount"),
                     ("calls", str(TOTAL_CALLS)), ("instructions", "%d (Ir)" % TOTAL_IR)]:
        check(re.search(r"^%s\s+%s$" % (re.escape(key), re.escape(val)), out, re.M),
              "text header has %s = %s" % (key, val))
    head, rows = text_rows(out)
    check(head.split() == ["module", "address", "name", "calls", "Ir", "share"],
          "text columns: %s" % head)
    for name, (mod, addr, calls, ir) in ROWS.items():
        got = rows.get(name)
        check(got is not None and got[:2] == (mod, addr) and got[2] == [calls, ir],
              "text row %r: %s" % (name, got))
    order = [k for k in rows]
    check(order[:5] == ["work", "rec", "leaf", "helper", "main"], "text order by Ir: %s" % order)
    check("skipped" not in out, "text without --all hides functions without counts")
    out = report("--top", "2", db)
    _, rows = text_rows(out)
    check(list(rows) == ["work", "rec"], "--top 2 shows two rows: %s" % list(rows))
    check("(6 more functions" in out, "--top 2 says how many are hidden")
    out = report("--all", db)
    check(re.search(r"skipped\s.*not instrumented: too-short-to-patch", out),
          "--all shows the skipped function and why")


def test_json(db):
    out = report("--format", "json", db)
    r = run([sys.executable, "-m", "json.tool"], input=out)
    check(r.returncode == 0, "python3 -m json.tool accepts the JSON: %s" % r.stderr)
    doc = json.loads(out)
    check(doc["meta"]["command"] == "/usr/bin/demo --fast input.txt", "json meta command")
    check(doc["totals"]["instrs"] == TOTAL_IR and doc["totals"]["calls"] == TOTAL_CALLS,
          "json totals %s" % doc["totals"])
    fns = {f["name"]: f for f in doc["functions"]}
    check(len(doc["functions"]) == len(ROWS), "json has every counted row")
    for name, (mod, addr, calls, ir) in ROWS.items():
        f = fns.get(name)
        check(f is not None and os.path.basename(f["module"]) == mod and
              int(f["address"], 16) == addr and f["calls"] == calls and f["instrs"] == ir,
              "json row %r: %s" % (name, f))
    check(len(doc["call_sites"]) == 5, "json call sites")
    doc = json.loads(report("--format=json", "--all", db))
    check(any(f["name"] == "skipped" and f["instrumented"] is False and
              f["reason"] == "too-short-to-patch" for f in doc["functions"]),
          "json --all has the skipped function")


def test_callgrind(db):
    cg = os.path.join(work, "synthetic.callgrind")
    r = run([reticle, "report", "--format", "callgrind", "-o", cg, db])
    check(r.returncode == 0 and r.stdout == "", "report -o writes the file only")
    events, totals, rows = annotate(cg)
    check(events == ["Ir", "Calls"], "events: %s" % events)
    check(totals == [TOTAL_IR, TOTAL_CALLS], "callgrind totals %s" % totals)
    for name, (mod, addr, calls, ir) in ROWS.items():
        check(rows.get(name) == [ir, calls], "callgrind self row %r: %s" % (name, rows.get(name)))
    events, totals, rows = annotate(cg, "--inclusive=yes")
    check(totals == [TOTAL_IR, TOTAL_CALLS], "inclusive totals %s" % totals)
    for name, costs in INCLUSIVE.items():
        check(rows.get(name) == costs, "inclusive row %s: %s, expected %s" % (name, rows.get(name), costs))
    arcs = annotate_callers(cg)
    check(arcs == ARCS, "call arcs %s" % arcs)
    text = open(cg, errors="replace").read()
    check(text.count("fn=(2) work") == 1 and "fn=(2)\n" in text, "names are compressed")
    check("cob=(2) /usr/lib/libdemo.so.1" in text, "calls into another module name it with cob=")
    # Block positions: main's two blocks at their own addresses.
    check("0x1100 10 1\n0x1120 90 0\n" in text, "self cost lines per block")
    # helper's one block does not add up to its Ir: one line at its address.
    check("fn=(3)\n0x1300 600 30\n" in text, "inconsistent blocks fall back to the function")


def test_fcount_only():
    db = make("fcount", "meta collectors fcount\nmodule m /bin/x 0\n"
              "function f m 0x10 4 calls=7\nfunction g m 0x20 4 calls=3\ncall f 0x12 g 3\n")
    _, rows = text_rows(report(db))
    check(rows.get("f") == ("x", 0x10, [7]), "fcount-only text row: %r" % (rows.get("f"),))
    out = report(db)
    check("Ir" not in out.split("\n\n")[1], "no Ir column without bbcount")
    cg = os.path.join(work, "fcount.callgrind")
    report("--format", "callgrind", "-o", cg, db)
    events, totals, rows = annotate(cg)
    check(events == ["Calls"] and totals == [10] and rows.get("g") == [3],
          "fcount-only callgrind: %s %s %s" % (events, totals, rows))


def test_empty():
    db = make("empty", "meta command true\n")
    out = report(db)
    check("functions     0 with counts" in out, "empty profile text")
    json.loads(report("--format", "json", db))
    cg = os.path.join(work, "empty.callgrind")
    report("--format", "callgrind", "-o", cg, db)
    events, totals, rows = annotate(cg)
    check(totals == [0] and rows == {}, "empty callgrind: %s %s" % (totals, rows))


def test_sqlite3(db):
    """The schema as docs/profile-schema.md describes it, read by sqlite3."""
    r = run(["sqlite3", db, "SELECT name, calls, instrs FROM function_report LIMIT 2"])
    check(r.stdout == "work|10|5000\nrec|50|2500\n", "sqlite3 function_report: %r" % r.stdout)
    r = run(["sqlite3", db, "SELECT m.path, sum(f.instrs) FROM functions f JOIN modules m"
             " ON m.id = f.module GROUP BY m.id ORDER BY 2 DESC"])
    check(r.stdout == "/usr/bin/demo|8210\n/usr/lib/libdemo.so.1|1220\n",
          "sqlite3 per-module sums: %r" % r.stdout)
    r = run(["sqlite3", db, "PRAGMA application_id; SELECT value FROM meta WHERE key = 'schema_version';"
             "SELECT count(*) FROM call_sites WHERE caller = (SELECT id FROM functions WHERE name = 'work')"])
    check(r.stdout == "1381253964\n2\n2\n", "sqlite3 identity and call_sites: %r" % r.stdout)
    r = run(["sqlite3", db, "SELECT sum(ninstrs * count) FROM blocks b JOIN functions f"
             " ON f.id = b.function WHERE f.name = 'work'"])
    check(r.stdout == "5000\n", "sqlite3 blocks: %r" % r.stdout)


db = make("synthetic", SPEC)
test_sqlite3(db)
test_text(db)
test_json(db)
test_callgrind(db)
test_fcount_only()
test_empty()
done()
