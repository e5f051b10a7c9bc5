#!/usr/bin/env python3
"""A timer inserted (reticle ctl add) while its function is on the stack
starts there, at the insertion (Paradyn's timer started at insertion).

usage: open_frames.py RETICLE WORKDIR TARGET

TARGET (programs/open_frames.c) has two threads inside outer(), each
entered once before any probe on it exists: one sleeps in inner() (outer's
frame is under inner's), one spins in outer itself. While they run, one
`reticle ctl add` inserts `time()` on outer, a count of inner's calls while
outer is on the stack (onstack), and a count of all inner's calls. Then
the program is told to end, and prints when each outer returned.

- onstack(outer) holds for every inner call after the insertion but the
  last one, which main makes after both outers returned: the two counts
  differ by exactly one.
- outer's time is the time from the insertion to each thread's return of
  outer, summed over the threads: between the sum from the end of the ctl
  request and the sum from its start (2% and 20 ms of slack), and its calls
  are 0 (no entry was seen).
- The program's output and exit status are its own."""
import os, re, shutil, subprocess, sys, time

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def ctl(reticle, pid, *args):
    return subprocess.run([reticle, "ctl", str(pid), *args], capture_output=True, text=True, timeout=60)


def main():
    reticle, work, target = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    agg = os.path.join(work, "agg.txt")
    p = subprocess.Popen([reticle, "probe", "-r", agg, "entry:inner { @before = count(); }", "--", target],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    try:
        if not p.stdout.readline().startswith("ready"):
            fail("the target did not start")
            return 1
        pid = None
        for _ in range(100):   # the probe session's child: the target
            out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
            if out and ctl(reticle, int(out[0]), "list").returncode == 0:
                pid = int(out[0])
                break
            time.sleep(0.05)
        if not pid:
            fail("no control socket")
            return 1
        time.sleep(0.3)
        t_a = time.clock_gettime(time.CLOCK_MONOTONIC)
        r = ctl(reticle, pid, "add", "entry:outer { @t = time(); }\n"
                "entry:inner /onstack(outer)/ { @in_outer = count(); }\n"
                "entry:inner { @after = count(); }")
        t_b = time.clock_gettime(time.CLOCK_MONOTONIC)
        if r.returncode or not r.stdout.startswith("ok"):
            fail(f"ctl add: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
        time.sleep(1.0)
        out, err = p.communicate("end\n", timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode:
        fail(f"reticle probe exited {p.returncode}: {err[-2000:]}")
    ended = [float(m.group(1)) for m in re.finditer(r"^thread \d ended ([\d.]+) inner \d+$", out, re.M)]
    if len(ended) != 2 or not out.rstrip().endswith("done"):
        fail(f"the program's output: {out!r}")
        return 1
    aggs = open(agg).read()
    print(aggs.strip())
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^@(\w+): (\d+)$", aggs, re.M)}
    m = re.search(r"^@t: calls (\d+), inclusive ([\d.]+) s", aggs, re.M)
    if "in_outer" not in counts or "after" not in counts or not m:
        fail(f"aggregations missing: {aggs!r}")
        return 1
    if counts["after"] < 10 or counts["in_outer"] != counts["after"] - 1:
        fail(f"inner's calls while outer is on the stack: {counts['in_outer']}, all after the insertion "
             f"{counts['after']} (one of them outside outer)")
    calls, inclusive = int(m.group(1)), float(m.group(2))
    lo = sum(e - t_b for e in ended) * 0.98 - 0.02
    hi = sum(e - t_a for e in ended) * 1.02 + 0.02
    print(f"outer's time {inclusive:.4f} s, calls {calls}; from the insertion to its returns: "
          f"{lo:.4f} .. {hi:.4f} s (ctl took {t_b - t_a:.3f} s)")
    if not lo <= inclusive <= hi:
        fail(f"outer's time {inclusive:.4f} s outside [{lo:.4f}, {hi:.4f}]")
    if calls != 0:
        fail(f"outer's calls {calls}: it was entered before the insertion only")
    print("FAILED" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
