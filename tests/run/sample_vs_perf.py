#!/usr/bin/env python3
"""Compares the sample collector's profile of real programs with perf's.

usage: sample_vs_perf.py RETICLE WORKDIR [--freq HZ] [--attempts N] [--only NAME]
                         [--skew FUNC=POINTS] [--runs N] [--bench DIR]

Debian's programs, deterministic and CPU-bound, about 4 s each: bzip2 -9
compressing 4 x 20 MB of generated text (most of its time in libbz2's
static functions, which have no symbol), and python3.11 running a
pure-Python loop (its eval loop and the static helpers of a stripped
non-PIE binary). Some 4,000 samples a run: at 1 kHz, a second's run of
bzip2 (1,200 samples) has perf disagree with itself by 3 points on its top
function (adjacent tight loops share their samples at random). Each runs under
`perf record -e cpu-clock -F 1000 -g` and under `reticle run -c sample
--freq 1000`; the self share of every function (its samples where it is the
leaf, over all samples of the run) is compared for the union of both top 10
lists: within 2 points each.

Functions are matched by where they start, not by name (an alias, a
symbol version, a function without a symbol): reticle's json gives each
function's module and link-time address; each perf sample's leaf is placed
by its symbol (the address minus perf's symoff) or, where perf has no
symbol ([unknown]), by the .eh_frame FDE (readelf) that covers it, the
runtime address turned into a link-time one through the sample's mmap
event and the file's PT_LOAD headers. Samples in the kernel are one
function, "[kernel]", as reticle has them.

A shared machine can make the two runs differ (page faults, a busy
neighbour): a workload that disagrees is run again, up to --attempts times
(default 3). --skew FUNC=POINTS adds points to one of perf's shares (a
check that the comparison fails). --runs N adds up N runs of each tool
per attempt. --bench DIR compares the four workloads of bench/workloads.sh
instead (its inputs set up in DIR, /tmp/reticle-bench by default there). Exits 77 when perf is missing or cannot
record, 0 when the shares agree."""
import bisect, json, os, re, shutil, subprocess, sys
from collections import Counter

TOL = 2.0
TOP = 10


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def loads_of(path, cache={}):
    """[(p_offset, p_vaddr, p_filesz)] of the PT_LOADs of an ELF file."""
    if path not in cache:
        out = sh(["readelf", "-lW", path]).stdout
        cache[path] = [(int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16))
                       for m in re.finditer(r"^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+"
                                            r"\s+(0x[0-9a-f]+)", out, re.M)]
    return cache[path]


def fdes_of(path, cache={}):
    """Sorted FDE ranges [(start, end)] of an ELF file's .eh_frame."""
    if path not in cache:
        out = sh(["readelf", "--debug-dump=frames", path]).stdout
        cache[path] = sorted((int(a, 16), int(b, 16))
                             for a, b in re.findall(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", out))
    return cache[path]


def link_addr(path, off):
    for po, pv, pf in loads_of(path):
        if po <= off < po + pf:
            return off - po + pv
    return None


def fde_start(path, addr):
    f = fdes_of(path)
    i = bisect.bisect_right(f, (addr, float("inf"))) - 1
    if i >= 0 and f[i][0] <= addr < f[i][1]:
        return f[i][0]
    return None


MMAP = re.compile(r"PERF_RECORD_MMAP2? (\d+)/\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|\d+)[^\]]*\]: \S+ (.+)$")
SAMPLE = re.compile(r"^\s*(\d+)\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")


def perf_profile(data):
    """{key: samples} from perf script: key (module basename, link address)
    or a name ("[kernel]", "[vdso]", "?MODULE+0xOFF" for a place without
    FDE), and {key: a name perf gave}."""
    p = sh(["perf", "script", "-i", data, "--show-mmap-events", "-F", "pid,ip,sym,symoff,dso", "-G"],
           timeout=300)
    maps, counts, names = {}, Counter(), {}
    for line in p.stdout.splitlines():
        m = MMAP.search(line)
        if m:
            pid, start, size, pgoff, path = m.groups()
            path = path.strip()
            if path.startswith("/"):
                maps.setdefault(int(pid), []).append((int(start, 16), int(size, 16), int(pgoff, 0), path))
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        pid, ip, sym, dso = int(m.group(1)), int(m.group(2), 16), m.group(3), m.group(4)
        if dso.startswith("[kernel") or ip >= 0xffff800000000000:
            counts["[kernel]"] += 1
            continue
        if dso == "[vdso]":
            counts["[vdso]"] += 1
            continue
        where = None
        for start, size, pgoff, path in reversed(maps.get(pid, [])):
            if start <= ip < start + size:
                where = (path, ip - start + pgoff)
                break
        if where is None:
            counts["?" + dso] += 1
            continue
        path, off = where
        mod = os.path.basename(os.path.realpath(path))
        sm = re.match(r"(.+)\+0x([0-9a-f]+)$", sym)
        addr = link_addr(path, off)
        if addr is not None and sm and sm.group(1) != "[unknown]":
            key = (mod, addr - int(sm.group(2), 16))
            names.setdefault(key, sm.group(1))
        elif addr is not None and fde_start(path, addr) is not None:
            key = (mod, fde_start(path, addr))
        else:
            key = f"?{mod}+{off:#x}"
        counts[key] += 1
    return counts, names


def reticle_profile(r, db, env):
    j = sh([r, "report", "-f", "json", db], env=env, timeout=300)
    s = json.loads(j.stdout).get("samples") or {}
    counts, names = Counter(), {}
    for f in s.get("functions", []):
        if f["name"] in ("[kernel]", "[vdso]"):
            key = f["name"]
        else:
            key = (os.path.basename(os.path.realpath(f["module"])), f["address"])
        counts[key] += f["self"]
        names.setdefault(key, re.sub(r"@@?[A-Z_]+[0-9.]*$", "", f["name"]))
    return counts, names, s.get("count", 0)


def label(key, *names):
    for n in names:
        if key in n:
            return n[key]
    return key if isinstance(key, str) else f"{key[0]}+{key[1]:#x}"


def compare(tag, perf, pnames, ret, rnames, rcount, skew):
    pcount = sum(perf.values())
    if not pcount or not rcount:
        print(f"FAIL {tag}: perf {pcount} samples, reticle {rcount}")
        return False
    ps = {k: 100.0 * v / pcount for k, v in perf.items()}
    rs = {k: 100.0 * v / rcount for k, v in ret.items()}
    for k in list(ps):
        if label(k, rnames, pnames) in skew:
            ps[k] += skew[label(k, rnames, pnames)]
    top = lambda d: [k for k, _ in sorted(d.items(), key=lambda kv: -kv[1])[:TOP]]
    keys = list(dict.fromkeys(top(ps) + top(rs)))
    keys.sort(key=lambda k: -max(ps.get(k, 0), rs.get(k, 0)))
    ok = True
    print(f"{tag}: perf {pcount} samples, reticle {rcount}")
    print(f"  {'function':<44} {'perf %':>7} {'reticle %':>9} {'diff':>7}")
    for k in keys:
        a, b = ps.get(k, 0.0), rs.get(k, 0.0)
        bad = abs(a - b) > TOL
        ok &= not bad
        print(f"  {label(k, rnames, pnames)[:44]:<44} {a:7.2f} {b:9.2f} {b - a:+7.2f}{'  <- off' if bad else ''}")
    return ok


def main():
    r, work = sys.argv[1], sys.argv[2]
    opts = sys.argv[3:]
    freq, attempts, only, skew, runs, bench = 1000, 3, None, {}, 1, None
    while opts:
        o = opts.pop(0)
        if o == "--freq":
            freq = int(opts.pop(0))
        elif o == "--attempts":
            attempts = int(opts.pop(0))
        elif o == "--only":
            only = opts.pop(0)
        elif o == "--skew":
            k, v = opts.pop(0).split("=")
            skew[k] = float(v)
        elif o == "--runs":
            runs = int(opts.pop(0))
        elif o == "--bench":
            bench = opts.pop(0)
        else:
            raise SystemExit(f"unknown argument {o}")
    if not shutil.which("perf") or not shutil.which("readelf"):
        print("skipped: no perf (Debian: linux-perf) or readelf")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    probe = sh(["perf", "record", "-q", "-e", "cpu-clock", "-o", os.path.join(work, "probe.data"),
                "--", "true"], timeout=60)
    if probe.returncode:
        print(f"skipped: perf record does not work here:\n{probe.stderr}")
        return 77

    if bench:
        # bench/workloads.sh's four, its inputs set up in BENCH (setup_workloads)
        workloads = [("bzip2", ["/usr/bin/bzip2", "-c", f"{bench}/text16m"], None),
                     ("sqlite3", ["/usr/bin/sqlite3", ":memory:"], f"{bench}/sqlite.sql"),
                     ("lua5.4", ["/usr/bin/lua5.4", f"{bench}/bench.lua"], None),
                     ("python3", ["/usr/bin/python3.11", f"{bench}/bench.py"], None)]
    else:
        text = os.path.join(work, "text20m")
        subprocess.run([sys.executable, "-c", GEN_TEXT, text], check=True, timeout=120)
        workloads = [("bzip2", ["/usr/bin/bzip2", "-9", "-c"] + [text] * 4, None),
                     ("python3", ["/usr/bin/python3.11", "-c", PY_LOOP], None)]
    failed = 0
    for tag, cmd, stdin in workloads:
        if only and tag != only:
            continue
        if not os.path.exists(cmd[0]):
            print(f"{tag}: skipped ({cmd[0]} missing)")
            continue
        for attempt in range(1, attempts + 1):
            perf, pnames, ret, rnames, rcount = Counter(), {}, Counter(), {}, 0
            for n in range(runs):
                data, db = os.path.join(work, f"{tag}.perf"), os.path.join(work, f"{tag}.db")
                with open(stdin or os.devnull) as f:
                    p = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "-g",
                                        "-o", data, "--"] + cmd, stdin=f, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True, timeout=300)
                with open(stdin or os.devnull) as f:
                    q = subprocess.run([r, "run", "-c", "sample", "--freq", str(freq), "-o", db, "--"] + cmd,
                                       stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                       timeout=300, env=env)
                if p.returncode or q.returncode:
                    break
                c, nm = perf_profile(data)
                perf.update(c)
                pnames.update(nm)
                c, nm, k = reticle_profile(r, db, env)
                ret.update(c)
                rnames.update(nm)
                rcount += k
            if p.returncode or q.returncode:
                print(f"FAIL {tag}: perf status {p.returncode}, reticle {q.returncode}\n{p.stderr}{q.stderr}")
                ok = False
                break
            ok = compare(f"{tag} (attempt {attempt}{f', {runs} runs' if runs > 1 else ''})",
                         perf, pnames, ret, rnames, rcount, skew)
            if ok:
                break
        if not ok:
            print(f"FAIL {tag}: shares differ by more than {TOL} points")
            failed += 1
    print("FAILED" if failed else "all agree")
    return 1 if failed else 0


GEN_TEXT = """
import random, sys
r = random.Random(1)
words = [''.join(r.choice('etaoinshrdlucmfwypvbgkjqxz') for _ in range(r.randint(2, 9))) for _ in range(5000)]
out, n = [], 0
while n < 20 << 20:
    line = ' '.join(r.choices(words, k=12)) + '\\n'
    out.append(line); n += len(line)
open(sys.argv[1], 'w').write(''.join(out))
"""

PY_LOOP = """
def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)
def text(n):
    t = 0
    for i in range(n):
        s = str(i * 7919)
        t += len(s.replace('1', 'ab')) + s.count('7') + len('%x' % i)
    return t
def table(n):
    d = {}
    for i in range(n):
        k = i % 1000
        d[k] = d.get(k, 0) + i
    return sorted(d.items(), key=lambda kv: -kv[1])[0]
print(fib(32), text(9000000), table(18000000))
"""


if __name__ == "__main__":
    sys.exit(main())
