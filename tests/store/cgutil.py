"""Helpers for the store tests: run tools, parse callgrind_annotate's output.

callgrind_annotate skips lines it cannot parse and still exits 0, so every
check looks at the numbers it prints and at its warnings."""
import re
import subprocess
import sys

failures = []
objs = {}  # function name -> object, from the last annotate() rows that named one


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def done():
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("ok")


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, errors="replace", **kw)


NUM = r"([\d,]+|\.)(?:\s+\(\s*[\d.]+%\))?"  # callgrind_annotate prints 0 as "."


def _num(s):
    return 0 if s == "." else int(s.replace(",", ""))


def annotate(path, *opts):
    """Runs callgrind_annotate; returns (events, totals, rows, stderr+warnings)
    with rows {function name: [costs...]} (file part dropped: reticle's
    export has no source files) and totals [costs...]."""
    r = run(["callgrind_annotate", "--auto=no", "--threshold=100"] + list(opts) + [path])
    check(r.returncode == 0, "callgrind_annotate %s exits 0 (%s)" % (path, r.stderr.strip()))
    text = r.stdout + r.stderr
    check("WARNING" not in text and "malformed" not in text,
          "callgrind_annotate %s %s: no warnings:\n%s" % (" ".join(opts), path, r.stderr))
    events = None
    totals = None
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^Events shown:\s+(.*)$", line)
        if m:
            events = m.group(1).split()
            continue
        if events is None:
            continue
        nums = r"^\s*" + r"\s+".join([NUM] * len(events)) + r"\s+"
        m = re.match(nums + r"PROGRAM TOTALS(?: \(calculated\))?\s*$", line)
        if m:
            totals = [_num(g) for g in m.groups()]
            continue
        m = re.match(nums + r"([^<*\s][^:]*):(.+?)(?: \[(.*)\])?\s*$", line)
        if m:
            g = m.groups()
            name = g[len(events) + 1]
            if g[len(events) + 2]:
                objs.setdefault(name, g[len(events) + 2])
            costs = [_num(x) for x in g[:len(events)]]
            old = rows.get(name)
            rows[name] = costs if old is None else [a + b for a, b in zip(old, costs)]
    return events, totals, rows


def annotate_callers(path):
    """Caller arcs from callgrind_annotate --tree=caller:
    {(caller name, callee name): count}."""
    r = run(["callgrind_annotate", "--auto=no", "--threshold=100", "--tree=caller", path])
    arcs = {}
    pending = []
    for line in r.stdout.splitlines():
        m = re.match(r"^.*?<\s+[^:]*:(.+) \(([\d,]+)x\)(?: \[.*\])?\s*$", line)
        if m:
            pending.append((m.group(1), _num(m.group(2))))
            continue
        m = re.match(r"^.*?\*\s+[^:]*:(.+?)(?: \[.*\])?\s*$", line)
        if m:
            for caller, count in pending:
                key = (caller, m.group(1))
                arcs[key] = arcs.get(key, 0) + count
            pending = []
            continue
        if not line.strip():
            pending = []
    return arcs
