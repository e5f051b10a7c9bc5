#!/usr/bin/env python3
"""Address randomization (reticle run --aslr / --no-aslr): with memtrace and
bbv it is off by default, so that two runs see the same addresses (the
cache sets, and a bbv run and the sampled memtrace run after it, meet the
same stream). The oracle is the program's own output: the addresses of its
stack, heap, mmap'd block, libc and main, printed by it and by a forked
child, and a second program it execs (sh -c). Checks:
- memtrace twice: the same addresses and the same misses in every
  configuration; meta aslr "off"; a sampled memtrace run (whose estimate
  is compared with the full run's) the same addresses as the full run;
- bbv twice: the same addresses, and memtrace's (a bbv run's intervals
  are the ones a later sampled memtrace run meets: reticle's own mappings
  in the target are sized alike for the two);
- fcount: as the system has it (meta "on"; the addresses differ between
  two runs where the system randomizes);
- fcount --no-aslr twice: the same addresses; memtrace --aslr: meta "on".
Skips (77) where randomization is off system-wide or cannot be turned off
(a container's seccomp profile refusing personality()).

usage: aslr.py RETICLE WORKDIR PROGRAM"""
import os, shutil, sqlite3, subprocess, sys


def meta(db):
    c = sqlite3.connect(db)
    m = dict(c.execute("select key, value from meta"))
    c.close()
    return m


def main():
    reticle, work, prog = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open("/proc/sys/kernel/randomize_va_space") as f:
        if f.read().strip() == "0":
            print("SKIP: address randomization is off on this system")
            return 77
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    cmd = ["/bin/sh", "-c", f"{prog} twice; {prog}"]
    caches = ["--cache", "l1d=8k:2:64", "--cache", "l1d=64k:2:64,l2=256k:4:64"]

    def run(name, args):
        db = os.path.join(work, name + ".db")
        r = subprocess.run([reticle, "run", "-o", db] + args + ["--"] + cmd, capture_output=True, text=True,
                           env=env, timeout=300)
        if r.returncode:
            print(f"FAIL: {name}: exit {r.returncode}\n{r.stderr}")
            sys.exit(1)
        if "cannot turn off address randomization" in r.stderr:
            print("SKIP: " + r.stderr.strip())
            sys.exit(77)
        lines = r.stdout.splitlines()
        if len(lines) != 3 or not lines[0].startswith("parent") or not lines[1].startswith("child"):
            print(f"FAIL: {name}: unexpected output\n{r.stdout}")
            sys.exit(1)
        return lines, meta(db)

    failures = 0
    a, ma = run("mt1", ["-c", "memtrace"] + caches)
    b, mb = run("mt2", ["-c", "memtrace"] + caches)
    if a != b:
        print("FAIL: memtrace: two runs saw different addresses:\n" + "\n".join(a + b))
        failures += 1
    for m, n in (("mt1", ma), ("mt2", mb)):
        if n.get("aslr") != "off":
            print(f"FAIL: {m}: meta aslr is {n.get('aslr')!r}, not 'off'")
            failures += 1
    cells = sorted(k for k in ma if k.startswith("memtrace_cache_"))
    if not cells or [ma[k] for k in cells] != [mb[k] for k in cells]:
        print("FAIL: memtrace: the two runs' cache counts differ:\n" +
              "\n".join(f"{k}: {ma.get(k)} | {mb.get(k)}" for k in cells))
        failures += 1
    s, ms = run("mts", ["-c", "memtrace", "--sample", "periodic:1000:3000"] + caches)
    if s != a or ms.get("aslr") != "off":
        print(f"FAIL: memtrace --sample: aslr {ms.get('aslr')!r}, addresses {'same' if s == a else 'differ'} "
              "from the full traced run's")
        failures += 1
    c, mc = run("bbv1", ["-c", "bbv", "--interval", "100000"])
    c2, mc2 = run("bbv2", ["-c", "bbv", "--interval", "100000"])
    if c != c2 or c != a or mc.get("aslr") != "off":
        print(f"FAIL: bbv: aslr {mc.get('aslr')!r}, addresses {'same' if c == c2 else 'differ'} between two runs, "
              f"{'same as' if c == a else 'other than'} memtrace's:\n" + "\n".join(c + a))
        failures += 1
    d, md = run("f1", ["-c", "fcount"])
    e, me = run("f2", ["-c", "fcount"])
    if md.get("aslr") != "on" or me.get("aslr") != "on":
        print(f"FAIL: fcount: meta aslr {md.get('aslr')!r}, {me.get('aslr')!r}, not 'on'")
        failures += 1
    if d == e:
        print("FAIL: fcount: two runs with randomization saw the same addresses:\n" + "\n".join(d))
        failures += 1
    f, mf = run("n1", ["-c", "fcount", "--no-aslr"])
    g, mg = run("n2", ["-c", "fcount", "--no-aslr"])
    if f != g or mf.get("aslr") != "off":
        print("FAIL: fcount --no-aslr: addresses differ, or meta aslr is not 'off':\n" + "\n".join(f + g))
        failures += 1
    h, mh = run("k", ["-c", "memtrace", "--aslr"] + caches)
    if mh.get("aslr") != "on" or h == a:
        print(f"FAIL: memtrace --aslr: meta aslr {mh.get('aslr')!r}, addresses {'same' if h == a else 'differ'}")
        failures += 1
    if failures:
        return 1
    print("ok: memtrace and bbv runs see the same addresses (" + a[0] + "); fcount's vary; --aslr, --no-aslr")
    return 0


if __name__ == "__main__":
    sys.exit(main())
