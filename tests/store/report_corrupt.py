#!/usr/bin/env python3
"""reticle report on damaged profiles: copies of a valid profile with bytes
overwritten at seeded random places. Every format must exit 0 or 1 (never
crash), and on failure print one line on stderr.

usage: report_corrupt.py RETICLE MKPROFILE WORKDIR"""
import os
import random
import sys
from cgutil import check, done, run

reticle, mkprofile, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
spec = ["meta command corrupt-test", "module m /bin/m 0"]
for i in range(300):
    spec.append("function f%d m 0x%x 32 calls=%d instrs=%d" % (i, 0x1000 + 32 * i, i + 1, 10 * i))
    spec.append("block f%d 0x%x 5 %d" % (i, 0x1000 + 32 * i, 2 * i))
    if i:
        spec.append("call f%d 0x%x f%d %d" % (i - 1, 0x1000 + 32 * i - 4, i, i + 1))
with open(os.path.join(work, "good.spec"), "w") as f:
    f.write("\n".join(spec) + "\n")
good = os.path.join(work, "good.db")
if os.path.exists(good):
    os.unlink(good)
r = run([mkprofile, os.path.join(work, "good.spec"), good])
check(r.returncode == 0, "mkprofile: %s" % r.stderr)
data = open(good, "rb").read()
rng = random.Random(1234)
outcomes = {0: 0, 1: 0}
for trial in range(40):
    bad = bytearray(data)
    for _ in range(rng.choice([1, 4, 32])):
        pos = rng.randrange(100, len(bad))   # past the header: the id stays
        bad[pos] = rng.randrange(256)
    path = os.path.join(work, "bad.db")
    with open(path, "wb") as f:
        f.write(bad)
    for fmt in ("text", "json", "callgrind"):
        r = run([reticle, "report", "--all", "--format", fmt, "-o", os.path.join(work, "out"), path])
        ok = r.returncode in (0, 1) and (r.returncode == 0 or len(r.stderr.splitlines()) == 1)
        check(ok, "trial %d %s: rc %d, stderr %r" % (trial, fmt, r.returncode, r.stderr))
        outcomes[r.returncode] = outcomes.get(r.returncode, 0) + 1
print("damaged profiles: %d reports succeeded, %d failed cleanly" % (outcomes[0], outcomes[1]))
done()
