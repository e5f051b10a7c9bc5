#!/usr/bin/env python3
"""A program with hundreds of libraries under the collectors that run it
without address randomization (bbv, memtrace): every library gets its code
cache. Without randomization the libraries lie against the stack's
reserve, and every window goes in the 2 GiB below them; windows of 16
times a library's text for the first ones took that room, and ffmpeg's
last 54 of 213 libraries ran uninstrumented ("no code cache near it"),
their accesses and blocks missing. Oracles: the native run's output and
status, the loader's list of the program's libraries (ldd), each of which
must be a module of the profile.

usage: many_libraries.py RETICLE WORKDIR   (exit 77 without ffmpeg)"""
import os, shutil, sqlite3, subprocess, sys

reticle, work = sys.argv[1:3]
ffmpeg = "/usr/bin/ffmpeg"
if not os.access(ffmpeg, os.X_OK) or not shutil.which("ldd"):
    print("ffmpeg not installed: skipped")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
libs = {os.path.basename(l.split("=>")[0].strip())
        for l in subprocess.run(["ldd", ffmpeg], capture_output=True, text=True).stdout.splitlines()
        if "=>" in l}
if len(libs) < 100:
    print(f"ffmpeg has {len(libs)} libraries here, not the hundreds this needs: skipped")
    sys.exit(77)
# one second of a test pattern and a tone, encoded bit-exactly to stdout
prog = [ffmpeg, "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x120:rate=25",
        "-f", "lavfi", "-i", "sine=duration=1", "-c:v", "mpeg4", "-c:a", "aac", "-f", "matroska",
        "-fflags", "+bitexact", "-flags", "+bitexact", "-"]
native = subprocess.run(prog, capture_output=True, timeout=120)
fails = 0
for c in ("bbv", "memtrace"):
    db = os.path.join(work, f"{c}.db")
    r = subprocess.run([reticle, "run", "-c", c, "-o", db, "--", *prog], capture_output=True,
                       env=env, timeout=900)
    err = r.stderr.decode(errors="replace")
    bad = []
    if r.returncode != native.returncode or r.stdout != native.stdout:
        bad.append(f"exit {r.returncode} (native {native.returncode}), "
                   f"{len(r.stdout)} bytes out (native {len(native.stdout)}), same: {r.stdout == native.stdout}")
    nocache = [l for l in err.splitlines() if "no code cache near it" in l]
    if nocache:
        bad.append(f"{len(nocache)} libraries without a code cache, e.g. {nocache[0]}")
    mods = {os.path.basename(p) for (p,) in sqlite3.connect(db).execute("SELECT path FROM modules")}
    missing = sorted(l for l in libs if l not in mods and not l.startswith("linux-vdso"))
    if missing:
        bad.append(f"{len(missing)} of {len(libs)} libraries not in the profile: {missing[:5]}")
    for b in bad:
        print(f"FAIL {c}: {b}")
    fails += bool(bad)
    if not bad:
        print(f"{c}: same output, {len(libs)} libraries instrumented")
print(f"{2 - fails} passed, {fails} failed")
sys.exit(1 if fails else 0)
