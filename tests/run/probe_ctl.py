#!/usr/bin/env python3
"""Probes inserted and removed while a multi-threaded program runs
(reticle ctl), counted exactly for the windows they were in.

usage: probe_ctl.py RETICLE WORKDIR [--go] TARGET [CYCLES] [-- TARGET ARGS]

TARGET (programs/probe_ctl_target.c) runs two threads calling spin() at
full speed all along; on "run K N" it calls step() N times in two threads
at once (with K and another value), waits until each spinning thread has
called spin() 1,000 times more, and prints how many calls each value
got. Each cycle adds clauses with `reticle ctl PID add` (a count of step's
calls with arg0 == K % 8 and one of all its calls, and counts of spin's
entries and returns), runs a phase, and removes them: step's counts, at
the end, must equal the calls of the phases they were in, exactly. spin
ran at full speed through every insertion: its entries and returns, in
one clause each added together, must differ by no more than the calls in
flight (its two threads) and be above zero. CYCLES adds and removes 4 of
them each, in one request each way: 1,000 probes for 250 cycles.

--go: TARGET is the Go program (go/ctl.go, `TARGET ctl`): its functions
are main.ctlStep and main.ctlSpin, whose returns after a call come back
through the return points of the original code (Go runs with original
return addresses), which a copy made again must take over: spin's exits
are counted there.

Also: requests to a session that does not exist, bad clauses and an
unknown clause number are refused with a message and a non-zero exit, the
program's output and exit status are its own, and `reticle ctl PID list`
shows the clauses."""
import os, re, shutil, subprocess, sys, time

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def ctl(reticle, pid, *args, want_ok=True):
    r = subprocess.run([reticle, "ctl", str(pid), *args], capture_output=True, text=True, timeout=60)
    if want_ok and (r.returncode or not r.stdout.startswith("ok")):
        fail(f"ctl {args}: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
    return r


def main():
    args = sys.argv[1:]
    go = "--go" in args
    if go:
        args.remove("--go")
    reticle, work, target = args[:3]
    cycles = int(args[3]) if len(args) > 3 else 250
    cmd = [target, "ctl"] if go else [target]
    step, spin = ("main.ctlStep", "main.ctlSpin") if go else ("step", "spin")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    agg = os.path.join(work, "agg.txt")
    r = ctl(reticle, 999999, "list", want_ok=False)
    if r.returncode == 0 or "no 'reticle probe' session" not in r.stderr:
        fail(f"ctl of no session: exit {r.returncode}, {r.stderr!r}")
    p = subprocess.Popen([reticle, "probe", "-r", agg, f"entry:{spin} {{ @spin_all = count(); }}", "--", *cmd],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    truth = {}
    try:
        if p.stdout.readline().strip() != "ready":
            fail("the target did not start")
            return 1
        pid = None
        for _ in range(100):   # the probe session's child: the target
            out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
            if out:
                pid = int(out[0])
                if ctl(reticle, pid, "list", want_ok=False).returncode == 0:
                    break
            time.sleep(0.05)
        else:
            fail("no control socket")
            return 1
        for text, why in ((f"entry:{step} {{ @x = nope(); }}", "expected count()"),
                          ("entry:nosuchfunction { @x = count(); }", "no function")):
            r = ctl(reticle, pid, "add", text, want_ok=False)
            if why and (r.returncode == 0 or why not in r.stderr):
                fail(f"bad clause {text!r}: exit {r.returncode}, {r.stderr!r}")
        r = ctl(reticle, pid, "remove", "9999", want_ok=False)
        if r.returncode == 0 or "no clause 9999" not in r.stderr:
            fail(f"remove of an unknown clause: exit {r.returncode}, {r.stderr!r}")
        t0 = time.time()
        for c in range(cycles):
            k = c % 8
            text = (f"entry:{step} /arg0 == {k}/ {{ @step_k{c} = count(); }}\n"
                    f"entry:{step} {{ @step_all{c} = count(); }}\n"
                    f"entry:{spin} {{ @spin_in{c} = count(); }}\n"
                    f"exit:{spin} {{ @spin_out{c} = count(); }}")
            r = ctl(reticle, pid, "add", text)
            ids = re.findall(r"\d+", r.stdout.split("(")[0])
            if len(ids) != 4:
                fail(f"cycle {c}: add answered {r.stdout!r}")
                break
            n = 2000 + 37 * c
            p.stdin.write(f"run {k} {n}\n")
            p.stdin.flush()
            line = p.stdout.readline().split()
            if len(line) != 10 or line[0] != "ran":
                fail(f"cycle {c}: the target answered {line}")
                break
            per = [int(x) for x in line[2:]]
            truth[c] = (per[k], sum(per))
            ctl(reticle, pid, "remove", *ids)   # together: spin's entries and returns pair
        elapsed = time.time() - t0
        r = ctl(reticle, pid, "list")
        if r.stdout.count("(removed)") != 4 * cycles:
            fail(f"list shows {r.stdout.count('(removed)')} removed clauses, want {4 * cycles}")
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = p.stderr.read()
    if p.returncode != 0:
        fail(f"exit status {p.returncode}: {err[-2000:]}")
    elif "warning" in err:
        fail(f"the session warned: {err[-2000:]}")
    got = {}
    for line in open(agg):
        m = re.match(r"^@(\w+): (\d+)$", line)
        if m:
            got[m.group(1)] = int(m.group(2))
    wrong = [(c, got.get(f"step_k{c}"), got.get(f"step_all{c}"), t) for c, t in truth.items()
             if (got.get(f"step_k{c}"), got.get(f"step_all{c}")) != t]
    if wrong or len(truth) != cycles:
        fail(f"{len(wrong)} of {len(truth)} phases counted wrong: {wrong[:5]}")
    spin = [(c, got.get(f"spin_in{c}", 0), got.get(f"spin_out{c}", 0)) for c in truth]
    # at most the calls in flight at the insertion and at the removal: two
    # threads (goroutines) call spin. In Go, a goroutine preempted (SIGURG)
    # inside spin resumes through a return trap, which must lead to the
    # newest copy (lazy.c's reaim_traps): it led to the old one, and one
    # cycle in 40 was off by a few calls to a tenth of the window.
    off = [s for s in spin if s[1] <= 0 or abs(s[1] - s[2]) > 2]
    if off:
        fail(f"spin's entries and returns while its probes were in, beyond its 2 threads' calls in flight: "
             f"{off[:5]}")
    if got.get("spin_all", 0) <= 0:
        fail("spin's count from the start is missing")
    print(f"{cycles} cycles, {4 * cycles} probes inserted and removed in {elapsed:.1f} s; "
          f"step's counts exact in {len(truth) - len(wrong)} phases; spin in/out {spin[:3]}")
    print("probe ctl: %d failures" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
