#!/usr/bin/env python3
"""Names from separate debug files: with Debian's libc6-dbg installed, every
libc function that callgrind names in a run is named the same by reticle
(bbcount) in the same program's run. Functions are matched by address
(callgrind's lowest instruction address of a function, minus libc's load
address, lies in reticle's function); two names of one address (aliases,
as memcpy and __memcpy_avx_unaligned) both count as that function's.

usage: debug_names.py RETICLE WORKDIR -- PROGRAM ARGS...
Exits 77 (skip) when libc has no debug file here."""
import bisect, collections, os, re, sqlite3, subprocess, sys

reticle, work = sys.argv[1], sys.argv[2]
prog = sys.argv[sys.argv.index("--") + 1:]
os.makedirs(work, exist_ok=True)
fn_out = subprocess.run([reticle, "functions", "/lib/x86_64-linux-gnu/libc.so.6"],
                        capture_output=True, text=True).stdout
if "debugfile" not in fn_out:
    print("SKIP: no debug file for libc (apt-get install libc6-dbg)")
    sys.exit(77)
cg = os.path.join(work, "cg.out")
subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg, "--dump-instr=yes",
                "--compress-strings=no", "--compress-pos=no"] + prog,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
db = os.path.join(work, "p.db")
subprocess.run([reticle, "run", "-c", "bbcount", "-o", db, "--"] + prog,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

lo = {}          # callgrind: libc function -> lowest address run
ob = fn = None
for line in open(cg):
    if line.startswith("ob="):
        ob = line[3:].strip()
    elif line.startswith("fn="):
        fn = line[3:].strip()
    else:
        m = re.match(r"^(0x[0-9a-f]+)\s", line)
        if m and ob and "libc.so" in ob and fn:
            a = int(m.group(1), 16)
            lo[fn] = min(lo.get(fn, a), a)


def plain(name):
    """callgrind's spelling without symbol versions and recursion marks."""
    return re.sub(r"('\d+)+$", "", name.split("@")[0])


con = sqlite3.connect(db)
rows = con.execute("select f.name, f.addr, f.size from functions f join modules m on m.id = f.module "
                   "where m.path like '%libc.so%' order by f.addr").fetchall()
addrs = [r[1] for r in rows]
# every name of each address (aliases), from the debug file, by nm
note = subprocess.run(["readelf", "-n", "/lib/x86_64-linux-gnu/libc.so.6"], capture_output=True,
                      text=True).stdout
bid = re.search(r"Build ID: ([0-9a-f]+)", note).group(1)
dbg = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"
byaddr = collections.defaultdict(set)
for path in (dbg, "/lib/x86_64-linux-gnu/libc.so.6"):
    nm = subprocess.run(["nm", "-D" if path.endswith(".6") else "-a", path], capture_output=True,
                        text=True).stdout
    for l in nm.splitlines():
        f = l.split()
        if len(f) == 3 and f[1] in "TtWwiI":
            byaddr[int(f[0], 16)].add(plain(f[2]))
for r in rows:
    byaddr[r[1]].add(plain(r[0]))
# libc's load address under valgrind, from a function both name
anchor = next((f for f in lo if plain(f) == "malloc"), None)
mine = {r[0]: r[1] for r in rows}
if anchor is None or "malloc" not in mine:
    print("FAIL: malloc not found in both runs")
    sys.exit(1)
base = lo[anchor] - mine["malloc"]
bad, checked = [], 0
for f, a in sorted(lo.items()):
    off = a - base
    i = bisect.bisect_right(addrs, off) - 1
    if i < 0 or off >= rows[i][1] + max(rows[i][2], 1):
        continue   # not a function reticle lists (PLT...)
    checked += 1
    if f == "(below main)":
        continue   # callgrind's name for what calls main
    if plain(f) != plain(rows[i][0]) and plain(f) not in byaddr[rows[i][1]]:
        bad.append(f"{f} at {off:#x}: reticle says {rows[i][0]}")
print(f"{checked} libc functions callgrind named, {len(bad)} named otherwise by reticle")
for b in bad[:20]:
    print("  " + b)
print(f"{1 if not bad else 0} passed, {1 if bad else 0} failed")
sys.exit(1 if bad else 0)
