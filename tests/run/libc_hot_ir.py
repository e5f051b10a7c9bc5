#!/usr/bin/env python3
"""No silent holes in libc: the instructions (Ir) reticle's bbcount counts in
each of libc's hottest functions equal callgrind's (--skip-plt=no) for the
same program's run, within a tolerance (0.5%).

callgrind's per-instruction counts are summed over each function range that
reticle's profile lists for libc, so a function entered in the middle of a
block (glibc's mempcpy jumps past memcpy's first instruction), a function
left uninstrumented, or code outside every listed function shows as a
difference. libc picks its string functions and their thresholds from
CPUID, which valgrind's virtual CPU answers otherwise (no ERMS or
AVX-512, other cache sizes): both runs get the same GLIBC_TUNABLES so that
they run the same code.

reticle runs twice, cold (an empty warm-start cache) and warm.

glibc.malloc.top_pad (64 MiB) keeps the number of sbrk calls the same in
both runs; --no-top-pad leaves it out, for a program whose heap outgrows
valgrind's brk segment: its first sbrk of 64 MiB fails there, and malloc
then marks the main arena non-contiguous, which only the valgrind run
does (python3: _int_free took a block 7,190 times natively and never
under valgrind, +4.4%; without the pad both runs agree to the instruction).

--placement-dependent GLOBS names functions whose path depends on where
their data lies (strcmp's page-crossing checks on strings of the stack and
the heap): their lines are printed ("note") but do not fail. python3's
__strcmp_avx2 varies by about 1% between two native runs of the same
command, with or without address randomization.

usage: libc_hot_ir.py RETICLE WORKDIR [--top N] [--tolerance F] [--stdin FILE] [--text BYTES]
                      [--no-top-pad] [--placement-dependent GLOBS] -- PROGRAM ARGS...
--text writes BYTES of words into WORKDIR/text, which @TEXT@ in ARGS names.
Prints one line per function; the last line counts passes and failures."""
import argparse, bisect, collections, fnmatch, os, random, re, shutil, sqlite3, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_oracle import parse_callgrind

TUNABLES = ":".join([
    "glibc.cpu.hwcaps=-ERMS,-FSRM,-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-RTM",
    "glibc.cpu.x86_rep_movsb_threshold=0x2000", "glibc.cpu.x86_rep_stosb_threshold=0x800",
    "glibc.cpu.x86_non_temporal_threshold=0x3000000", "glibc.cpu.x86_shared_cache_size=0x4000000",
    "glibc.cpu.x86_data_cache_size=0x8000", "glibc.malloc.top_pad=0x4000000"])

ap = argparse.ArgumentParser()
ap.add_argument("reticle")
ap.add_argument("work")
ap.add_argument("--top", type=int, default=20)
ap.add_argument("--tolerance", type=float, default=0.005)
ap.add_argument("--stdin")
ap.add_argument("--text", type=int)
ap.add_argument("--no-top-pad", action="store_true")
ap.add_argument("--placement-dependent", default="")
argv = sys.argv[1:]
prog = argv[argv.index("--") + 1:]
args = ap.parse_args(argv[:argv.index("--")])
os.makedirs(args.work, exist_ok=True)
if args.no_top_pad:
    TUNABLES = ":".join(t for t in TUNABLES.split(":") if not t.startswith("glibc.malloc.top_pad="))
placement = [g for g in args.placement_dependent.split(",") if g]
env = dict(os.environ, GLIBC_TUNABLES=TUNABLES)
if args.text:
    text = os.path.join(args.work, "text")
    rnd = random.Random(1)
    words = ["".join(rnd.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rnd.randint(2, 9)))
             for _ in range(3000)]
    with open(text, "w") as f:
        n = 0
        while n < args.text:
            line = " ".join(rnd.choice(words) for _ in range(12)) + "\n"
            f.write(line)
            n += len(line)
    prog = [a.replace("@TEXT@", text) for a in prog]


def run(cmd, extra=None):
    stdin = open(args.stdin, "rb") if args.stdin else subprocess.DEVNULL
    return subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(env, **(extra or {})))


cg = os.path.join(args.work, "cg.out")
r = run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg, "--dump-instr=yes", "--skip-plt=no",
         "--compress-strings=no", "--compress-pos=no"] + prog)
if r.returncode:
    print(f"FAIL: callgrind exited {r.returncode}: {r.stderr.decode(errors='replace')[-500:]}")
    print("0 passed, 1 failed")
    sys.exit(1)
native_out = r.stdout
# callgrind: Ir per run-time address of libc, and each named function's lowest
instr, lowest = collections.Counter(), {}
for (ob, fn), v in parse_callgrind(cg).items():
    if not ob or not re.search(r"/libc\.so", ob):
        continue
    for a, ir in v["instr"].items():
        instr[a] += ir
    if v["instr"]:
        name = re.sub(r"('\d+)+$", "", fn)
        lowest[name] = min(lowest.get(name, min(v["instr"])), min(v["instr"]))


def compare(db, tag):
    """Prints a line per hot function of run TAG's profile DB; returns
    (passed, failed)."""
    con = sqlite3.connect(db)
    rows = con.execute("select f.name, f.addr, f.size, coalesce(f.instrs, 0), f.instrumented, f.reason"
                       " from functions f join modules m on m.id = f.module"
                       " where m.path like '%/libc.so%' order by f.addr").fetchall()
    mine = {r[0]: r[1] for r in rows}
    # libc's load address under valgrind, from an exported function both name
    anchor = next((a for a in ("malloc", "free", "strlen") if a in lowest and a in mine), None)
    if anchor is None:
        print(f"FAIL [{tag}]: no libc function named in both runs (malloc, free, strlen)")
        return 0, 1
    base = lowest[anchor] - mine[anchor]
    starts = [r[1] for r in rows]
    theirs, outside = collections.Counter(), 0
    for a, ir in instr.items():
        off = a - base
        i = bisect.bisect_right(starts, off) - 1
        if i < 0 or off >= rows[i][1] + max(rows[i][2], 1):
            outside += ir
            continue
        theirs[i] += ir

    total = sum(instr.values())
    print(f"[{tag}] libc: callgrind {total} Ir, {outside} of them outside reticle's functions (PLT and the like)")
    passed = failed = 0
    for i, ir in theirs.most_common(args.top):
        name, addr, size, counted, instrumented, reason = rows[i]
        diff = (counted - ir) / ir
        ok = abs(diff) <= args.tolerance
        why = "" if instrumented else f" (not instrumented: {reason})"
        if not ok and instrumented and any(fnmatch.fnmatch(name, g) for g in placement):
            print(f"note [{tag}] {name} at {addr:#x}: callgrind {ir}, reticle {counted} "
                  f"({diff * 100:+.3f}%), a path that depends on where the data lies")
            continue
        print(f"{'ok  ' if ok else 'FAIL'} [{tag}] {name} at {addr:#x}: callgrind {ir}, reticle {counted} "
              f"({diff * 100:+.3f}%){why}")
        passed += ok
        failed += not ok
    return passed, failed


passed = failed = 0
cache = os.path.join(args.work, "cache")
shutil.rmtree(cache, ignore_errors=True)
for tag in ("cold", "warm"):
    db = os.path.join(args.work, tag + ".db")
    if os.path.exists(db):
        os.unlink(db)
    r = run([args.reticle, "run", "-c", "bbcount", "-o", db, "--"] + prog, {"RETICLE_CACHE_DIR": cache})
    if r.returncode or r.stdout != native_out:
        print(f"FAIL [{tag}]: reticle exited {r.returncode}, output "
              f"{'differs' if r.stdout != native_out else 'the same'}: {r.stderr.decode(errors='replace')[-500:]}")
        failed += 1
        continue
    p, f = compare(db, tag)
    passed += p
    failed += f
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
