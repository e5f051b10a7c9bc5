#!/usr/bin/env python3
"""Checks the sample collector against what the program measured of itself.

usage: sample_oracle.py RETICLE WORKDIR phases [--freq HZ] [--skew FUNC=FACTOR]
                        -- PROGRAM ARGS...
       sample_oracle.py RETICLE WORKDIR bad_input -- PROGRAM ARGS...

MODE "phases" (programs/sample_phases.c): the program spins in functions of
its own (nested, recursive, mutually recursive, two threads, a forked child)
and prints "truth FUNCTION SELF_CPU_SECONDS", each function's own part timed
with the CPU clock of the thread (or child process) that ran it. The program
runs natively once (it must exit with status 5 and print its truth), then
under `reticle run -c sample`, `-c fcount,sample` and `-c bbcount,sample`
(--freq 2000 by default). In each run:
  - the exit status is 5 (the program's own);
  - each measured function's self share (its self samples over all the
    run's samples, `report -f json`'s "samples"; a sample in the kernel
    counts for the function whose call or fault led there, as the thread's
    CPU clock counts it) is within 2 points of its
    truth share (its CPU seconds over the sum of all the truth); what is
    outside the measured functions (main, libc, [kernel]) is under 3%;
  - total shares (the function anywhere on the stack, counted once): the
    nested outer function's is at least its inner's, and it, the head of the
    mutual recursion and the recursive function are within 2 points of the
    truth of what runs under them;
  - the forked child's function is there; the meta (sample_event,
    sample_freq, sample_count, sample_period_mean) agrees with the run;
  - `report -f folded` (and `--samples`) lines add up to the json count.
--skew FUNC=FACTOR multiplies one function's truth (a check that the oracle
fails on a wrong truth).

MODE "bad_input": refused runs (the program must not start): --freq 0, not
a number, above kernel.perf_event_max_sample_rate; --freq without the
sample collector; --event cycles on a machine without a PMU (skipped where
perf_event_open of cycles works). And a run whose program exits 7: status 7.

Exits 0 when all agree."""
import ctypes, json, os, shutil, subprocess, sys
import sampling

fails = 0
TOL = 2.0  # points


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def truths(stdout):
    t = {}
    for line in stdout.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == "truth":
            t[w[1]] = t.get(w[1], 0.0) + float(w[2])
    return t


def reticle(r, args, env, **kw):
    return subprocess.run([r] + args, capture_output=True, text=True, env=env, **kw)


def check_run(r, work, prog, env, collectors, freq, skew):
    tag = collectors
    db = os.path.join(work, collectors.replace(",", "_") + ".db")
    p = reticle(r, ["run", "-c", collectors, "--freq", str(freq), "-o", db, "--"] + prog,
                env, timeout=300)
    if p.returncode != 5:
        fail(f"{tag}: exit status {p.returncode}, want 5\n{p.stderr}")
        return
    truth = truths(p.stdout)
    for name, f in skew.items():
        if name in truth:
            truth[name] *= f
    if "sp_child" not in truth or len(truth) < 9:
        fail(f"{tag}: the program printed {len(truth)} truths:\n{p.stdout}")
        return
    j = reticle(r, ["report", "-f", "json", db], env, timeout=120)
    if j.returncode:
        fail(f"{tag}: report -f json: status {j.returncode}\n{j.stderr}")
        return
    doc = json.loads(j.stdout)
    s = doc.get("samples")
    if not s or not s.get("count"):
        fail(f"{tag}: no samples in the json report: {s!r}")
        return
    count = s["count"]
    self_, total = {}, {}
    for f in s["functions"]:
        self_[f["name"]] = self_.get(f["name"], 0) + f["self"]
        total[f["name"]] = max(total.get(f["name"], 0), f["total"])
    if sum(self_.values()) != count:
        fail(f"{tag}: the functions' self samples add up to {sum(self_.values())}, count {count}")
    # a sample taken in the kernel (a page fault, a system call) is in the
    # CPU time of the thread that caused it: its truth counts it in the
    # function the user stack ends in, so the oracle does too
    fo = reticle(r, ["report", "-f", "folded", "--samples", db], env, timeout=120)
    if fo.returncode == 0:
        self_ = {}
        for line in fo.stdout.splitlines():
            path, n = line.rsplit(" ", 1)
            frames = path.split(";")
            leaf = frames[-2] if frames[-1] == "[kernel]" and len(frames) > 1 else frames[-1]
            self_[leaf] = self_.get(leaf, 0) + int(n)

    tsum = sum(truth.values())
    share = lambda n: 100.0 * self_.get(n, 0) / count
    tshare = lambda secs: 100.0 * secs / tsum
    print(f"{tag}: {count} samples ({s.get('seconds')} s), truth {tsum:.3f} s of CPU")
    print(f"  {'function':<14} {'truth s':>9} {'truth %':>8} {'samples':>8} {'sample %':>9} {'diff':>7}")
    for name in sorted(truth, key=lambda n: -truth[n]):
        want, got = tshare(truth[name]), share(name)
        bad = abs(got - want) > TOL
        print(f"  {name:<14} {truth[name]:9.4f} {want:8.2f} {self_.get(name, 0):8d} {got:9.2f}"
              f" {got - want:+7.2f}{'  <- off' if bad else ''}")
        if bad:
            fail(f"{tag}: {name}: self share {got:.2f}%, truth {want:.2f}%")
    rest = 100.0 - sum(share(n) for n in truth)
    others = sorted(((v, n) for n, v in self_.items() if n not in truth and v), reverse=True)
    print(f"  outside the measured functions: {rest:.2f}% ("
          + ", ".join(f"{n} {v}" for v, n in others[:6]) + ")")
    if rest > 3.0:
        fail(f"{tag}: {rest:.2f}% of the samples are outside the measured functions")

    # total shares: the function anywhere on the stack, counted once
    tot = lambda n: 100.0 * total.get(n, 0) / count
    if tot("sp_outer") < tot("sp_inner"):
        fail(f"{tag}: sp_outer's total {tot('sp_outer'):.2f}% < sp_inner's {tot('sp_inner'):.2f}%")
    for name, under in (("sp_outer", ("sp_outer", "sp_inner")),
                        ("sp_even", ("sp_even", "sp_odd")),
                        ("sp_rec", ("sp_rec",))):
        want = tshare(sum(truth[u] for u in under))
        ok = abs(tot(name) - want) <= TOL
        print(f"  total {name:<8} {tot(name):6.2f}% truth {want:6.2f}%{'' if ok else '  <- off'}")
        if not ok:
            fail(f"{tag}: {name}: total share {tot(name):.2f}%, truth {want:.2f}%")
    if self_.get("sp_child", 0) <= 0:
        fail(f"{tag}: the forked child's sp_child has no samples")

    meta = doc.get("meta", {})
    want_meta = {"sample_event": "cpu-clock", "sample_freq": str(freq), "sample_count": str(count)}
    for k, v in want_meta.items():
        if str(meta.get(k)) != v:
            fail(f"{tag}: meta {k} = {meta.get(k)!r}, want {v!r}")
    try:
        period = float(meta.get("sample_period_mean"))
        if abs(period - 1e9 / freq) > 0.1 * 1e9 / freq:
            fail(f"{tag}: meta sample_period_mean {period}, want about {1e9 / freq:.0f} ns")
        trunc = int(meta.get("sample_truncated"))
        if trunc > count // 100:
            fail(f"{tag}: meta sample_truncated {trunc} of {count} samples")
    except (TypeError, ValueError):
        fail(f"{tag}: meta without sample_period_mean or sample_truncated: {meta}")
    secs = s.get("seconds")
    if not isinstance(secs, (int, float)) or abs(secs - count / freq) > 0.01 * count / freq + 0.001:
        fail(f"{tag}: samples seconds {secs!r}, {count} samples at {freq} Hz")

    for extra in ([], ["--samples"]):
        fo = reticle(r, ["report", "-f", "folded"] + extra + [db], env, timeout=120)
        n = 0
        try:
            for line in fo.stdout.splitlines():
                stack, c = line.rsplit(" ", 1)
                n += int(c)
        except ValueError:
            fail(f"{tag}: report -f folded {' '.join(extra)}: a bad line {line!r}")
        if fo.returncode or n != count:
            fail(f"{tag}: report -f folded {' '.join(extra)}: status {fo.returncode},"
                 f" {n} samples, json count {count}")


def phases(r, work, prog, env, args):
    freq, skew = 2000, {}
    i = 0
    while i < len(args):
        if args[i] == "--freq":
            freq = int(args[i + 1]); i += 2
        elif args[i] == "--skew":
            k, v = args[i + 1].split("="); skew[k] = float(v); i += 2
        else:
            raise SystemExit(f"unknown argument {args[i]}")
    n = subprocess.run(prog, capture_output=True, text=True, timeout=120)
    if n.returncode != 5 or len(truths(n.stdout)) < 9:
        fail(f"native: status {n.returncode} (want 5), output:\n{n.stdout}{n.stderr}")
        return
    print(f"native: status 5, {len(truths(n.stdout))} truths")
    for c in ("sample", "fcount,sample", "bbcount,sample"):
        check_run(r, work, prog, env, c, freq, skew)


def has_pmu():
    """perf_event_open of cycles (user only) on this thread works."""
    class Attr(ctypes.Structure):
        _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                    ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                    ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64),
                    ("wakeup_events", ctypes.c_uint32), ("bp_type", ctypes.c_uint32),
                    ("config1", ctypes.c_uint64)]  # PERF_ATTR_SIZE_VER0: 64 bytes
    a = Attr()
    a.type, a.size, a.config = 0, ctypes.sizeof(Attr), 0  # PERF_TYPE_HARDWARE, CPU_CYCLES
    a.flags = 1 | (1 << 5) | (1 << 6)  # disabled, exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(298, ctypes.byref(a), 0, -1, -1, ctypes.c_ulong(0))  # __NR_perf_event_open
    if fd >= 0:
        os.close(fd)
        return True
    return False


def bad_input(r, work, prog, env):
    marker = os.path.join(work, "ran")
    sh = ["sh", "-c", f"touch {marker}; exit 7"]
    try:
        maxrate = int(open("/proc/sys/kernel/perf_event_max_sample_rate").read())
    except OSError:
        maxrate = 100000

    def expect(status, words, args, target=sh):
        if os.path.exists(marker):
            os.unlink(marker)
        p = reticle(r, ["run"] + args + ["-o", os.path.join(work, "bad.db"), "--"] + target,
                    env, timeout=60, stdin=subprocess.DEVNULL)
        err = p.stderr.strip()
        ok = p.returncode == status and all(w.lower() in err.lower() for w in words)
        if status != 7 and os.path.exists(marker):
            fail(f"reticle run {' '.join(args)}: the program ran")
        if not ok:
            fail(f"reticle run {' '.join(args)}: status {p.returncode} (want {status}),"
                 f" stderr (want {words}):\n{err}")
        else:
            print(f"ok: reticle run {' '.join(args)}: {status}: {err.splitlines()[0] if err else ''}")

    expect(2, ["--freq"], ["-c", "sample", "--freq", "0"])
    expect(2, ["--freq"], ["-c", "sample", "--freq", "abc"])
    expect(2, ["--freq"], ["-c", "sample", "--freq", "-5"])
    expect(2, ["--freq"], ["-c", "sample", "--freq", "1.5"])
    expect(2, ["--freq", "sample"], ["-c", "fcount", "--freq", "1000"])
    expect(2, ["--freq", "sample"], ["--freq", "1000"])
    expect(1, ["--freq", str(maxrate + 1), "perf_event_max_sample_rate"],
           ["-c", "sample", "--freq", str(maxrate + 1)])
    if has_pmu():
        print("skipped: --event cycles (this machine has a PMU: perf_event_open of cycles works)")
    else:
        expect(1, ["cycles", "hardware"], ["-c", "sample", "--event", "cycles"])
    # the program's own status passes through, with and without an
    # instrumenting collector
    expect(7, [], ["-c", "sample", "--freq", "1000"])
    expect(7, [], ["-c", "fcount,sample"])
    expect(5, [], ["-c", "sample", "--freq", "500"], target=prog)


def main():
    r, work, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    dd = sys.argv.index("--")
    opts, prog = sys.argv[4:dd], sys.argv[dd + 1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    sampling.require(r)
    if mode == "phases":
        phases(r, work, prog, env, opts)
    elif mode == "bad_input":
        bad_input(r, work, prog, env)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print("FAILED" if fails else "all agree")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
