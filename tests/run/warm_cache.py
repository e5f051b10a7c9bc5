#!/usr/bin/env python3
"""The warm-start cache: a second run relocates what the first ran, with the
same counts; a function that stops running leaves the list after four runs;
a corrupt list is ignored and rewritten, and so is a damaged file of saved
copies; a cache over its size loses its least recently used
files; --cold leaves no list; an unusable
cache directory does not stop the run; a library's list per program is
left alone by another program's run.

usage: warm_cache.py RETICLE WORKDIR PROGRAM (tests/run/programs/warm.c)"""
import json, os, re, shutil, struct, subprocess, sys, time

reticle, work, prog = sys.argv[1:4]
cache = os.path.join(work, "cache")
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(*args, cold=False, cache_dir=None, env_extra=None):
    db = os.path.join(work, "p.db")
    cmd = [reticle, "run", "--stats", "-c", "fcount"] + (["--cold"] if cold else []) + \
          ["-o", db, "--", prog] + list(args)
    # without the armed text (run.armed_text's subject): libc's alone is
    # 1.4 MB, most of the 2 MB bound the size checks below set
    env = dict(os.environ, RETICLE_CACHE_DIR=cache_dir or cache, RETICLE_ARMED_TEXT="0", **(env_extra or {}))
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
    err = r.stderr.decode(errors="replace")
    m = re.search(r"\((\d+) from the warm-start list\)", err)
    rep = json.loads(subprocess.run([reticle, "report", "--format", "json", "--all", db],
                                    capture_output=True, check=True).stdout)
    calls = {f["name"]: f.get("calls") for f in rep["functions"]}
    return r, int(m.group(1)) if m else None, calls


def placed(r):
    """Saved copies the run placed (its --stats line)."""
    m = re.search(r"(\d+) saved copies placed", r.stderr.decode(errors="replace"))
    return int(m.group(1)) if m else 0


def listed():
    """Link-time addresses on the program's list (the file written for it)."""
    out = set()
    for name in os.listdir(cache):
        data = open(os.path.join(cache, name), "rb").read()
        if data[:8] != b"RTLWARM1":
            continue
        n = struct.unpack_from("<I", data, 8)[0]
        out |= {v & ((1 << 56) - 1) for v in struct.unpack_from(f"<{n}Q", data, 16)}
    return out


def address(sym):
    nm = subprocess.run(["nm", prog], capture_output=True, text=True, check=True).stdout
    return next(int(l.split()[0], 16) for l in nm.splitlines() if l.split()[-1] == sym)


native = subprocess.run([prog, "x"], capture_output=True)
shutil.rmtree(cache, ignore_errors=True)
os.makedirs(work, exist_ok=True)

r, warm, calls = run("x")
check(r.returncode == 7 and r.stdout == native.stdout, f"cold run: exit {r.returncode}, output as native")
check(warm == 0, f"cold run relocated {warm} functions from a list")
check(address("only_with_arg") in listed() and address("common") in listed(),
      "the list holds only_with_arg and common after the cold run")
# named by the build-id when the program has one, else by the file's identity
notes = subprocess.run(["readelf", "-n", prog], capture_output=True, text=True).stdout
m = re.search(r"Build ID: ([0-9a-f]+)", notes)
want = f"b-{m.group(1)}.warm" if m else None
names = os.listdir(cache)
check(want in names if want else any(n.startswith("f-") for n in names),
      f"the program's list is named {want or 'f-<hash>.warm'}")

r, warm, calls = run("x")
check(r.returncode == 7 and r.stdout == native.stdout, f"warm run: exit {r.returncode}, output as native")
check(warm and warm > 0, f"warm run relocated {warm} functions from the list")
check(calls.get("only_with_arg") == 1 and calls.get("common") == 1,
      f"warm run counts: only_with_arg {calls.get('only_with_arg')}, common {calls.get('common')}")

# what is kept beside the list, the listed functions' copies (and the decoded
# instructions of those without one): a damaged file costs time only
placed_before = placed(r)
check(placed_before > 0, f"warm run placed {placed_before} saved copies")
kept = [n for n in os.listdir(cache) if ".code" in n or n.endswith(".insns")]
check(any(".code" in n for n in kept), f"copies kept: {kept}")
for name in kept:
    path = os.path.join(cache, name)
    data = bytearray(open(path, "rb").read())
    for k in range(len(data) // 2, len(data)):
        data[k] ^= 0x5a
    open(path, "wb").write(bytes(data))
r, warm, calls = run("x")
check(r.returncode == 7 and r.stdout == native.stdout and warm and calls.get("only_with_arg") == 1
      and calls.get("common") == 1 and placed(r) < placed_before,
      f"damaged copies: exit {r.returncode}, {warm} from the list, {placed(r)} copies placed, "
      f"only_with_arg {calls.get('only_with_arg')}, common {calls.get('common')}")

for i in range(1, 5):
    r, warm, calls = run()
    check(r.returncode == 0 and calls.get("only_with_arg") in (0, None) and calls.get("common") == 1,
          f"run {i} without argument: exit {r.returncode}, only_with_arg "
          f"{calls.get('only_with_arg')} calls, common {calls.get('common')}")
    still = address("only_with_arg") in listed()
    check(still == (i < 4), f"after {i} runs without it only_with_arg is {'' if still else 'no longer '}listed")

for name in os.listdir(cache):
    with open(os.path.join(cache, name), "wb") as f:
        f.write(b"RTLWARM1" + b"\xff" * 40)
r, warm, calls = run("x")
check(r.returncode == 7 and warm == 0 and calls.get("only_with_arg") == 1,
      f"corrupt lists ignored: exit {r.returncode}, {warm} from a list")
check(address("only_with_arg") in listed(), "corrupt lists rewritten")

# a bounded cache: files of other binaries, used long ago, go first; the
# program's own stay; a half-written file of a killed run goes
big = os.path.join(cache, "b-" + "0" * 40 + ".insns")
with open(big, "wb") as f:
    f.write(b"\0" * (3 << 20))
os.utime(big, (1e9, 1e9))
stale_tmp = os.path.join(cache, "b-" + "1" * 40 + ".warm.123.tmp")
open(stale_tmp, "wb").close()
os.utime(stale_tmp, (1e9, 1e9))
# The directory is read again only when the total its last reading found
# (the file `usage`) plus what runs wrote since passes the bound, or an
# hour after that reading: a file put there by hand waits until then.
usage = os.path.join(cache, "usage")
r, warm, calls = run("x", env_extra={"RETICLE_CACHE_MAX_MB": "2"})
check(r.returncode == 7 and os.path.exists(big) and os.path.exists(usage),
      f"the directory not read again within the hour of its last reading ({sorted(os.listdir(cache))})")
with open(usage) as f:
    total, when = map(int, f.read().split())
with open(usage, "w") as f:
    f.write(f"{total} {when - 7200}\n")
r, warm, calls = run("x", env_extra={"RETICLE_CACHE_MAX_MB": "2"})
check(r.returncode == 7 and not os.path.exists(big) and not os.path.exists(stale_tmp)
      and address("only_with_arg") in listed(),
      f"cache over its bound, read again after an hour: the least recently used file and a "
      f"stale .tmp removed, the program's list kept ({sorted(os.listdir(cache))})")
with open(usage) as f:
    total, when = map(int, f.read().split())
check(total < 2 << 20 and abs(when - time.time()) < 600, f"usage after the reading: {total} {when}")
with open(big, "wb") as f:
    f.write(b"\0" * (3 << 20))
os.utime(big, (1e9, 1e9))
with open(usage, "w") as f:
    f.write(f"{(2 << 20) + 1} {int(time.time())}\n")
r, warm, calls = run("x", env_extra={"RETICLE_CACHE_MAX_MB": "2"})
check(r.returncode == 7 and not os.path.exists(big) and address("only_with_arg") in listed(),
      f"cache over its bound by its usage's sum: read again at once ({sorted(os.listdir(cache))})")

shutil.rmtree(cache)
r, warm, calls = run("x", cold=True)
check(r.returncode == 7 and not os.path.exists(cache), "--cold writes no list")

blocker = os.path.join(work, "not-a-dir")
open(blocker, "w").close()
r, warm, calls = run("x", cache_dir=blocker)
check(r.returncode == 7 and r.stdout == native.stdout and calls.get("only_with_arg") == 1,
      f"unusable cache directory: exit {r.returncode}, run complete")


# two images of the binary in one run (a child that ends first, then its
# parent), each with functions of its own: both sets are listed and saved,
# and the next runs place them and rewrite no store of copies (megabytes for
# a large library; the small lists change with the ages of their entries)
shutil.rmtree(cache, ignore_errors=True)
native = subprocess.run([prog, "fork"], capture_output=True)
r, warm, calls = run("fork")
both = address("in_child") in listed() and address("in_parent") in listed()
check(r.returncode == 0 and r.stdout == native.stdout and both,
      f"fork run: exit {r.returncode}, in_child and in_parent {'both' if both else 'not both'} listed")
run("fork")
def stores():
    return {n: os.stat(os.path.join(cache, n)).st_mtime_ns for n in os.listdir(cache) if ".warm" not in n and n != "usage"}
stamp = stores()
r, warm, calls = run("fork")
again = stores()
check(r.returncode == 0 and calls.get("in_child") == 1 and calls.get("in_parent") == 1 and stamp == again,
      f"a fork run again: in_child {calls.get('in_child')}, in_parent {calls.get('in_parent')}, "
      f"{'no file' if stamp == again else 'files'} rewritten")

# a library's list per program (b-<id>.warm-<hash of the executable>):
# another program's run of the same libraries leaves this program's lists
# of them as they were, and has lists of its own
def program_lists():
    return {n: open(os.path.join(cache, n), "rb").read() for n in os.listdir(cache)
            if re.fullmatch(r"[bf]-[0-9a-f]+\.warm-[0-9a-f]{16}", n)}
mine = program_lists()
other = subprocess.run([reticle, "run", "-c", "fcount", "-o", os.path.join(work, "other.db"), "--",
                        "/bin/true"], capture_output=True, env=dict(os.environ, RETICLE_CACHE_DIR=cache),
                       timeout=120)
after = program_lists()
check(mine and other.returncode == 0 and all(after.get(n) == v for n, v in mine.items())
      and len(after) > len(mine),
      f"lists per program: {len(mine)} of this program's kept as they were after another program's run, "
      f"{len(after) - len(mine)} new")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
