#!/usr/bin/env python3
"""reticle top --by time: the time in each function, live, against where
the program's threads are by construction.

usage: top_time.py RETICLE WORKDIR TARGET

TARGET (programs/open_frames.c) keeps three threads in one place each
until it is told to end: one spins in outer() itself, one sleeps in
nanosleep (called by inner(), called by outer()), and the main thread
waits in read() on stdin. So in every refresh after the first, outer's
self time is one CPU (100%), its total two (both threads are under it),
the sleep's and read's self time one each, and inner's total one; the
first refresh includes the start. Launched (`-- TARGET`) and attached
(`PID`, threads already inside those functions when reticle comes: their
frames start at the attach) alike. Tolerance: 10 points of a CPU."""
import os, re, shutil, subprocess, sys, time

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def refreshes(out):
    """Each refresh's rows: {function: (self, total)}."""
    res = []
    for block in out.split("--- ")[1:]:
        rows = {}
        for m in re.finditer(r"^\s*\d+\s+\d+\s+\d+\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+\S+$", block, re.M):
            name = re.sub(r"@.*", "", m.group(3))
            rows[name] = (float(m.group(1)), float(m.group(2)))
        res.append(rows)
    return res


def check(what, out):
    rs = refreshes(out)
    if len(rs) < 3:
        fail(f"{what}: {len(rs)} refreshes: {out[-2000:]!r}")
        return
    for k, rows in enumerate(rs[1:], 2):
        sleep = next((v for n, v in rows.items() if "nanosleep" in n), None)
        want = {"outer": (100, 200), "read": (100, None), "inner": (None, 100), "sleep": (100, None)}
        got = dict(rows, sleep=sleep) if sleep else rows
        for fn, (self_, total) in want.items():
            v = got.get(fn)
            if not v:
                fail(f"{what}, refresh {k}: no {fn}: {rows}")
                continue
            if self_ is not None and abs(v[0] - self_) > 10:
                fail(f"{what}, refresh {k}: {fn} self {v[0]}%, want {self_}%")
            if total is not None and abs(v[1] - total) > 10:
                fail(f"{what}, refresh {k}: {fn} total {v[1]}%, want {total}%")
    print(f"{what}: {len(rs)} refreshes; last: " +
          ", ".join(f"{n} {s:.1f}/{t:.1f}" for n, (s, t) in sorted(rs[-1].items())[:8]))


def main():
    reticle, work, target = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    top = [reticle, "top", "--by", "time", "--interval", "0.5", "--iterations", "4", "-n", "50"]
    # launched
    p = subprocess.Popen(top + ["--", target], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(3)
    out, err = p.communicate("end\n", timeout=60)
    if p.returncode or not out.rstrip().endswith("done"):
        fail(f"launched: exit {p.returncode}, {err[-1500:]!r}")
    check("launched", out)
    # attached
    t = subprocess.Popen([target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        t.stdout.readline()
        r = subprocess.run(top + [str(t.pid)], capture_output=True, text=True, timeout=60, env=env)
        if r.returncode:
            fail(f"attached: exit {r.returncode}, {r.stderr[-1500:]!r}")
        check("attached", r.stdout)
        out, _ = t.communicate("end\n", timeout=30)
        if t.returncode or not out.rstrip().endswith("done"):
            fail(f"the attached program after top: exit {t.returncode}, {out!r}")
    finally:
        if t.poll() is None:
            t.kill()
    r = subprocess.run([reticle, "top", "--by", "nothing", "1"], capture_output=True, text=True)
    if r.returncode == 0 or "--by takes" not in r.stderr:
        fail(f"--by nothing: exit {r.returncode}, {r.stderr!r}")
    print("FAILED" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
