#!/usr/bin/env python3
"""reticle sim stopped by a signal (Ctrl-C, kill): SIGTERM or SIGINT to a
program that runs forever, or that blocks in a read, stops the simulation
at an instruction boundary. reticle exits 128 + the signal, says so with
the instruction count, the tools report and -o leaves the profile of the
run so far (read back with reticle report: marked stopped, no exit status,
instructions totalling the count), and no temporary file.
    [SIM_ARCH=rv64|mips32] interrupt.py RETICLE WORKDIR SPIN.c"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

ARCH = os.environ.get("SIM_ARCH", "rv64")
CC = {"rv64": "riscv64-linux-gnu-gcc", "mips32": "mipsel-linux-gnu-gcc"}[ARCH]


def wait_started(path, proc):
    for _ in range(200):
        if proc.poll() is not None or "started" in open(path).read():
            return
        time.sleep(0.05)


def case(reticle, work, binary, name, sig, args, stdin=subprocess.DEVNULL):
    prof = os.path.join(work, name + ".db")
    out, err = os.path.join(work, name + ".out"), os.path.join(work, name + ".err")
    for f in glob.glob(prof + "*"):
        os.unlink(f)
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen([reticle, "sim", "-o", prof, "-c", "icount", "--", binary] + args,
                             stdin=stdin, stdout=o, stderr=e)
        wait_started(out, p)
        time.sleep(0.3)
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            return ["%s: still running 20 s after the signal" % name]
    text = open(err).read()
    fails = []
    if rc != 128 + sig:
        fails.append("%s: exit status %d, wanted %d" % (name, rc, 128 + sig))
    m = re.search(r"interrupted by %s after (\d+) instructions" % signal.Signals(sig).name, text)
    if not m:
        fails.append("%s: no 'interrupted by %s' message: %r" % (name, signal.Signals(sig).name, text))
    left = glob.glob(prof + ".tmp*")
    if left:
        fails.append("%s: temporary files left: %s" % (name, left))
    if not os.path.exists(prof):
        return fails + ["%s: no profile" % name]
    rep = subprocess.run([reticle, "report", "--format", "json", prof], capture_output=True, text=True)
    if rep.returncode:
        return fails + ["%s: report failed: %s" % (name, rep.stderr)]
    d = json.loads(rep.stdout)
    meta, instrs = d["meta"], d["totals"]["instrs"]
    if "interrupted" not in meta.get("sim_stopped", "") or "exit_status" in meta:
        fails.append("%s: meta does not mark the run stopped: %s" % (name, meta))
    if m and not (int(meta.get("sim_icount", -1)) == instrs == int(m.group(1))):
        fails.append("%s: instructions %s, sim_icount %s, message %s" % (name, instrs, meta.get("sim_icount"), m.group(1)))
    if "icount:" not in text:
        fails.append("%s: the icount tool did not report" % name)
    if not fails:
        print("ok %s: status %d, %d instructions in the profile" % (name, rc, instrs))
    return fails


def main():
    reticle, work, src = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    binary = os.path.join(work, "spin." + ARCH)
    subprocess.run([CC, "-O2", "-static", "-o", binary, src], check=True)
    fails = case(reticle, work, binary, "term", signal.SIGTERM, [])
    fails += case(reticle, work, binary, "int", signal.SIGINT, [])
    r, w = os.pipe()   # a read that blocks: the writer stays open
    fails += case(reticle, work, binary, "read", signal.SIGTERM, ["read"], stdin=r)
    os.close(r)
    os.close(w)
    for f in fails:
        print("FAIL", f)
    return 1 if fails else 0


sys.exit(main())
