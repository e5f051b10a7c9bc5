#!/usr/bin/env python3
"""reticle attach -c sample on a process that is already running.

usage: attach_oracle.py RETICLE WORKDIR -- ATTACH_LATE SECONDS

The fixture (programs/attach_late.c) starts, says "ready", spins in
at_main, then starts a thread (at_thread) and forks a child (at_child),
each spinning half as long. reticle attaches once it is ready, without
--duration: it must end when the process does, the process's output and
exit status must be its own (0), and the profile must hold at_main and,
created after the attach, the thread's and the child's functions (the
child an image of its own), each function's share of the samples (with
it on the stack) within 5 points of its share of the seconds the program
measured. A second
attach with --duration 0.5 ends after about that long while the process
runs on. Refusals: a process that does not exist (exit 1), a collector
that cannot attach (memtrace: exit 2)."""
import json, os, shutil, subprocess, sys, time
import sampling

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
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    sampling.require(reticle)
    db = os.path.join(work, "a.db")
    target = subprocess.Popen(prog, stdout=subprocess.PIPE, text=True)
    if target.stdout.readline().strip() != "ready":
        fail("the fixture did not start")
    t_attach = time.monotonic()
    r = subprocess.run([reticle, "attach", "-c", "sample", "--freq", "2000", "-o", db, str(target.pid)],
                       capture_output=True, text=True, env=env, timeout=120)
    out, _ = target.communicate(timeout=60)
    target.stdout.close()
    if target.returncode != 0:
        fail(f"the process exited {target.returncode}")
    if r.returncode != 0:
        fail(f"attach exited {r.returncode}: {r.stderr}")
    truth = {}
    for line in out.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == "truth":
            truth[w[1]] = float(w[2])
    rep = subprocess.run([reticle, "report", "-f", "json", db], capture_output=True, text=True)
    doc = json.loads(rep.stdout) if rep.returncode == 0 else {}
    # each function spins in spin() and reads the clock: its share is of the
    # samples with it on the stack
    fns = {f["name"]: f["total"] for f in (doc.get("samples") or {}).get("functions", [])}
    total = (doc.get("samples") or {}).get("count", 0)
    tsum = sum(truth.values())
    for name in ("at_main", "at_thread", "at_child"):
        want = 100 * truth.get(name, 0) / tsum if tsum else 0
        have = 100 * fns.get(name, 0) / total if total else 0
        print(f"{name:<10} truth {want:6.2f}%  sampled {have:6.2f}%  ({fns.get(name, 0)} samples)")
        if not fns.get(name):
            fail(f"{name} has no sample (a thread or process created after the attach not followed?)")
        elif abs(want - have) > 5:
            fail(f"{name}: {have:.2f}% of the samples, the program says {want:.2f}%")
    # --duration: ends while the process runs on
    target = subprocess.Popen(prog[:1] + ["3"], stdout=subprocess.PIPE, text=True)
    target.stdout.readline()
    target.stdout.close()   # what it prints later goes nowhere
    t0 = time.monotonic()
    r = subprocess.run([reticle, "attach", "--duration", "0.5", "-o", os.path.join(work, "d.db"),
                        str(target.pid)], capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - t0
    if r.returncode != 0 or not 0.4 < took < 1.5 or target.poll() is not None:
        fail(f"--duration 0.5: exit {r.returncode} after {took:.2f} s, process {target.poll()}")
    else:
        print(f"ok: --duration 0.5 ended after {took:.2f} s, the process running on")
    target.kill()
    target.wait()
    for args, want in ((["999999999"], 1), (["-c", "memtrace", str(os.getpid())], 2)):
        r = subprocess.run([reticle, "attach", "-o", os.path.join(work, "x.db")] + args, capture_output=True,
                           text=True, env=env, timeout=60)
        if r.returncode != want or not r.stderr.strip():
            fail(f"attach {' '.join(args)}: exit {r.returncode} (want {want}) {r.stderr!r}")
    print(f"{fails} failure(s)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
