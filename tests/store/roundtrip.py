#!/usr/bin/env python3
"""Round trip through the Callgrind export: a real valgrind callgrind run
(--dump-instr=yes) of a small program, its per-function self Ir and call
arcs (as callgrind_annotate prints them) loaded into a profile through the
API, exported by 'reticle report --format callgrind' and read again by
callgrind_annotate. Totals, self Ir per function and call counts per arc
must come back unchanged; inclusive costs, estimated, must equal
callgrind's where the estimate is exact (functions whose callees each have
one caller).

usage: roundtrip.py RETICLE MKPROFILE FIXTURE WORKDIR"""
import os
import sys
import urllib.parse
import cgutil
from cgutil import annotate, annotate_callers, check, done, run

reticle, mkprofile, fixture, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
vg = os.path.join(work, "valgrind.callgrind")
r = run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--callgrind-out-file=" + vg, fixture])
check(r.returncode == 0, "valgrind runs the fixture: %s" % r.stderr[-500:])

events, vg_totals, vg_self = annotate(vg)
vg_objs = dict(cgutil.objs)
vg_arcs = annotate_callers(vg)
_, _, vg_incl = annotate(vg, "--inclusive=yes")
check(events == ["Ir"] and vg_totals and len(vg_self) > 20,
      "valgrind's profile parsed: %s %s %d rows" % (events, vg_totals, len(vg_self)))

# Every function name seen, as one profile row each (callgrind_annotate
# itself merges rows of the same name, so names are the unit compared).
names = sorted(set(vg_self) | {n for arc in vg_arcs for n in arc})
entries = {n: 0 for n in names}
for (caller, callee), count in vg_arcs.items():
    entries[callee] += count
modules = sorted({vg_objs.get(n, "unknown") for n in names})
spec = ["meta command %s" % fixture, "meta collectors fcount,bbcount"]
spec += ["module m%d %s 0" % (i, m) for i, m in enumerate(modules)]
key = {n: "f%d" % i for i, n in enumerate(names)}
for i, n in enumerate(names):
    spec.append("function %s m%d 0x%x 16 name=%s calls=%d instrs=%d" % (
        key[n], modules.index(vg_objs.get(n, "unknown")), 0x10000 + 0x100 * i,
        urllib.parse.quote(n, safe=""), entries[n], vg_self.get(n, [0])[0]))
for i, ((caller, callee), count) in enumerate(sorted(vg_arcs.items())):
    spec.append("call %s 0x%x %s %d" % (key[caller], 0x10000 + 0x100 * names.index(caller) + 1 + i % 200,
                                         key[callee], count))
with open(os.path.join(work, "roundtrip.spec"), "w") as f:
    f.write("\n".join(spec) + "\n")
db = os.path.join(work, "roundtrip.db")
if os.path.exists(db):
    os.unlink(db)
r = run([mkprofile, os.path.join(work, "roundtrip.spec"), db])
check(r.returncode == 0, "mkprofile: %s" % r.stderr)
out = os.path.join(work, "reticle.callgrind")
r = run([reticle, "report", "--format", "callgrind", "-o", out, db])
check(r.returncode == 0, "reticle report --format callgrind: %s" % r.stderr)

events, totals, rows = annotate(out)
check(events == ["Ir", "Calls"], "export events %s" % events)
check(totals and totals[0] == vg_totals[0], "total Ir %s == valgrind's %s" % (totals, vg_totals))
for n in names:
    want = vg_self.get(n, [0])[0]
    got = rows.get(n, [0, 0])[0]
    check(got == want, "self Ir of %s: %d, valgrind %d" % (n, got, want))
check(set(n for n in rows if rows[n][0]) == set(n for n in vg_self if vg_self[n][0]),
      "the same functions have self cost")
arcs = annotate_callers(out)
check(arcs == vg_arcs, "call arcs and counts equal valgrind's (%d arcs)" % len(vg_arcs))

# Inclusive: exact where every function below has a single caller.
callers = {}
for (caller, callee) in vg_arcs:
    callers.setdefault(callee, set()).add(caller)


def exact(n, seen=()):
    if n in seen:
        return False
    for (caller, callee) in vg_arcs:
        if caller == n and (callers[callee] != {n} or not exact(callee, seen + (n,))):
            return False
    return True


_, incl_totals, incl = annotate(out, "--inclusive=yes")
check(incl_totals and incl_totals[0] == vg_totals[0], "inclusive totals")
# Only the fixture's own functions: in libc and ld.so, callgrind splits
# functions by inlined source file and counts ifunc resolvers and
# non-returning calls in ways that names alone do not capture.
checked = [n for n in names if exact(n) and n in vg_incl and vg_objs.get(n) == os.path.realpath(fixture)]
for n in checked:
    check(incl.get(n, [None])[0] == vg_incl[n][0],
          "inclusive Ir of %s: %s, valgrind %s" % (n, incl.get(n), vg_incl[n]))
for n in ("top", "mid", "bottom"):
    check(n in checked, "%s is checked for an exact inclusive cost" % n)
for n in names:
    check(incl.get(n, [0])[0] <= vg_totals[0], "inclusive Ir of %s within the total" % n)
print("round trip: %d functions, %d arcs, total Ir %d, %d exact inclusive rows"
      % (len(names), len(vg_arcs), vg_totals[0], len(checked)))
done()
