#!/usr/bin/env python3
"""A code cache that fills up (RETICLE_DEBUG_CODE_CACHE shrinks it): the
functions that do not fit run as they are, named in the profile with their
reason, and the program runs as natively.

usage: small_code_cache.py RETICLE WORKDIR -- PROGRAM

PROGRAM (programs/cache_fill.c) calls memcpy, then enough of libc to fill a
small cache, then mempcpy in a loop. glibc's mempcpy goes on three bytes
into memcpy, inside the jump that leads memcpy's callers to its copy: when
memcpy has a copy, mempcpy must have one too (the cache keeps a reserve
for such copies). Without it the program died; with memcpy's entry made a
trap instead (the last resort, which warns "every call traps") it took a
trap per call. Each cache size from 12 to 96 KiB is tried, with fcount and
with cover: at some of them memcpy fits and mempcpy would not."""
import os, shutil, sqlite3, subprocess, sys

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    native = subprocess.run(prog, capture_output=True, text=True)
    left_out = 0
    for coll in ("fcount", "cover"):
        for kb in range(12, 100, 4):
            db = os.path.join(work, f"{coll}-{kb}.db")
            env = dict(os.environ, RETICLE_DEBUG_CODE_CACHE=str(kb << 10),
                       RETICLE_CACHE_DIR=os.path.join(work, f"cache-{coll}-{kb}"))
            try:
                r = subprocess.run([reticle, "run", "-c", coll, "-o", db, "--"] + prog, capture_output=True,
                                   text=True, env=env, timeout=120)
            except subprocess.TimeoutExpired:
                fail(f"{coll}, {kb} KiB: still running after 120 s")
                continue
            if (r.returncode, r.stdout) != (native.returncode, native.stdout) or "every call traps" in r.stderr:
                fail(f"{coll}, {kb} KiB: exit {r.returncode} output {r.stdout!r}, natively {native.returncode} "
                     f"{native.stdout!r}: {r.stderr[-400:]}")
                continue
            with sqlite3.connect(db) as c:
                full = c.execute("select count(*) from functions where not instrumented and "
                                 "reason like '%code cache full%'").fetchone()[0]
            left_out += full > 0
    if not left_out:
        fail("no run filled its code cache")
    print(f"ok: {left_out} runs filled their cache; every run's output as natively")
    print(f"{fails} failure(s)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
