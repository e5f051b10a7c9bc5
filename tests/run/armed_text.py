#!/usr/bin/env python3
"""Armed text (docs/engine.md): a run leaves in the cache a copy of each
large module's text with its entries' int3s, and the next run maps it over
the module's text instead of writing the int3s.

Checked against the binary itself: the file's text is libc's own pages
where it is not an int3; the next run maps it (its debug line says so, and
the program's /proc/self/maps shows libc's text from a file whose name ends
in libc.so.6) and counts what the run before counted; a file whose header
no longer matches is ignored and written again; RETICLE_ARMED_TEXT=0 and
--cold leave it alone.

usage: armed_text.py RETICLE WORKDIR PROGRAM (tests/run/programs/warm.c)"""
import json, os, re, shutil, subprocess, sys

reticle, work, prog = sys.argv[1:4]
cache = os.path.join(work, "cache")
failures = []
HEADER = 4096


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(argv, extra=(), env_extra=None):
    db = os.path.join(work, "p.db")
    env = dict(os.environ, RETICLE_CACHE_DIR=cache, RETICLE_VERBOSE="3", **(env_extra or {}))
    r = subprocess.run([reticle, "run", "-c", "fcount", *extra, "-o", db, "--", *argv],
                       capture_output=True, env=env, timeout=120)
    rep = json.loads(subprocess.run([reticle, "report", "--format", "json", "--all", db],
                                    capture_output=True, check=True).stdout)
    # functions that ran (a cold run also lists callees relocated with their
    # callers that never ran)
    calls = {(f.get("module"), f["name"]): f["calls"] for f in rep["functions"] if f.get("calls")}
    return r, r.stderr.decode(errors="replace"), calls


def libc_mapped(log):
    return re.search(r"libc\.so\.6: \d+ of \d+ functions armed \(text mapped armed\)", log) is not None


def libc_armed(log):
    return re.search(r"libc\.so\.6: \d+ of \d+ functions armed", log) is not None


def armed_file():
    names = [n for n in os.listdir(cache) if n.endswith(".armed.libc.so.6")]
    return os.path.join(cache, names[0]) if len(names) == 1 else None


def libc_path():
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("/libc.so.6"):
            return line.split()[-1]
    return None


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
native = subprocess.run([prog], capture_output=True).stdout

# the first run writes the int3s and leaves the armed copy
r, log, calls1 = run([prog])
check(r.returncode == 0 and r.stdout == native, "first run: the program's output and status")
check(libc_armed(log) and not libc_mapped(log), "first run: libc armed by writing")
path = armed_file()
check(path is not None, "the cache holds libc's armed text (b-*.armed.libc.so.6)")
if path:
    data = open(path, "rb").read()
    check(data[:8] == b"RTLARMD1", "its header")
    addr, off, length = (int.from_bytes(data[56 + 8 * i:64 + 8 * i], "little") for i in range(3))
    check(len(data) == HEADER + length and off % 4096 == 0 and length > 0, "its size: a page and the segment's")
    with open(libc_path(), "rb") as f:
        f.seek(off)
        orig = f.read(length)
    orig += b"\0" * (length - len(orig))
    text = data[HEADER:]
    diff = [i for i in range(length) if text[i] != orig[i]]
    check(all(text[i] == 0xcc for i in diff), "it is libc's own pages but for int3s")
    check(len(diff) > 1000, f"with an int3 at each armed entry ({len(diff)})")

# the next run maps it, counts the same, and the program sees libc's name
r, log, calls2 = run([prog])
check(r.returncode == 0 and r.stdout == native, "second run: the program's output and status")
check(libc_mapped(log), "second run: libc's text mapped armed")
check(calls1 == calls2, "second run: the same calls per function")
r, log, _ = run(["/bin/cat", "/proc/self/maps"])
lines = r.stdout.decode().splitlines()
check(libc_mapped(log) and any(" r-xp " in l and l.endswith(".armed.libc.so.6") for l in lines),
      "a program reading its maps finds libc's text under a name ending in libc.so.6")
rf, logf, _ = run([prog, "fork"])
check(rf.returncode == 0 and rf.stdout == subprocess.run([prog, "fork"], capture_output=True).stdout,
      "a forked child runs on the mapped text")

# a header that does not match (another set of entries): ignored, written again
if path:
    with open(path, "r+b") as f:
        f.seek(16)
        b = f.read(1)
        f.seek(16)
        f.write(bytes([b[0] ^ 0xff]))
    r, log, calls3 = run([prog])
    check(r.returncode == 0 and r.stdout == native and calls3 == calls1, "a stale file: the run is right")
    check(libc_armed(log) and not libc_mapped(log), "a stale file is not mapped")
    r, log, _ = run([prog])
    check(libc_mapped(log), "it was written again, and the next run maps it")

r, log, _ = run([prog], env_extra={"RETICLE_ARMED_TEXT": "0"})
check(r.returncode == 0 and libc_armed(log) and not libc_mapped(log), "RETICLE_ARMED_TEXT=0: written, not mapped")
shutil.rmtree(cache)
r, log, _ = run([prog], extra=["--cold"])
check(r.returncode == 0 and not (os.path.isdir(cache) and armed_file()), "--cold: no armed text in the cache")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
