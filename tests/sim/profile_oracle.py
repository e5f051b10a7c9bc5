#!/usr/bin/env python3
"""Checks a `reticle sim -o` profile against qemu's executed-address trace,
nm's function symbols and objdump's instruction addresses (all independent
of reticle): per-function instructions executed, their total, and every
block row (each of its instructions ran exactly `count` times).
usage: profile_oracle.py REPORT.json PROFILE.db QEMU_PCS NM_OUTPUT OBJDUMP_OUTPUT"""
import bisect, json, re, sqlite3, sys
from collections import Counter

report, db, pcs_file, nm_file, objdump_file = sys.argv[1:6]
trace = [int(l, 16) for l in open(pcs_file) if l.strip()]
execs = Counter(trace)
syms = []   # (addr, size, name): function symbols with a size
for line in open(nm_file):
    f = line.split()
    if len(f) == 4 and f[2] in 'TtWw' and int(f[1], 16) > 0:
        syms.append((int(f[0], 16), int(f[1], 16), f[3]))
syms.sort()
starts = [s[0] for s in syms]

def func_of(a):
    i = bisect.bisect_right(starts, a) - 1
    return syms[i][2] if i >= 0 and a < syms[i][0] + syms[i][1] else None

want = Counter()
for a, n in execs.items():
    want[func_of(a)] += n
doc = json.load(open(report))
got = Counter({f['name']: f['instrs'] for f in doc['functions'] if f.get('instrs')})
fail = 0
if None in want:
    print('FAIL: the oracle found', want[None], 'executed instructions outside function symbols')
    fail = 1
if dict(want) != dict(got):
    print('FAIL per-function instrs: want', sorted(want.items(), key=str), 'got', sorted(got.items()))
    fail = 1
if doc['totals'].get('instrs') != len(trace):
    print('FAIL total instrs: want', len(trace), 'got', doc['totals'].get('instrs'))
    fail = 1

insns = sorted(int(m.group(1), 16) for m in
               (re.match(r'^\s*([0-9a-f]+):\t', l) for l in open(objdump_file)) if m)
con = sqlite3.connect(db)
rows = con.execute('select f.name, b.addr, b.ninstrs, b.count from blocks b join functions f on f.id = b.function').fetchall()
per_func = Counter()
for name, addr, n, count in rows:
    i = bisect.bisect_left(insns, addr)
    run = insns[i:i + n]
    bad = [hex(a) for a in run if execs[a] != count]
    if len(run) != n or run[0] != addr or bad:
        print('FAIL block %s %#x x%d count %d: instructions with other counts %s' % (name, addr, n, count, bad))
        fail = 1
    per_func[name] += n * count
if dict(per_func) != dict(got):
    print('FAIL: sum(ninstrs * count) per function', dict(per_func), 'instrs', dict(got))
    fail = 1
covered = sum(per_func.values())
if not fail:
    print('ok: %d instructions in %d functions, %d block rows cover them' % (len(trace), len(got), len(rows)))
sys.exit(fail)
