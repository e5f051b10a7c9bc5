#!/usr/bin/env python3
"""reticle sim --strace against qemu-user's -strace (the oracle): the same
program makes the same sequence of system calls, named alike, and the calls
that fail under qemu fail with the same errno as the guest sees it (-N in
the trace). MIPS o32 numbers start at 4000. qemu names a call it does not
know 'Unknown syscall N' (rseq): that entry matches any name.
    [SIM_ARCH=rv64|mips32] strace.py RETICLE WORKDIR SOURCE.c ARGS..."""
import os
import re
import subprocess
import sys

ARCH = os.environ.get("SIM_ARCH", "rv64")
CC, QEMU = {"rv64": ("riscv64-linux-gnu-gcc", "qemu-riscv64"), "mips32": ("mipsel-linux-gnu-gcc", "qemu-mipsel")}[ARCH]
# calls qemu-user 7.2 does not implement, which reticle does: their results differ
QEMU_LACKS = {"set_robust_list"}


def calls_sim(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"\[sim\] 0x[0-9a-f]+ (\w+)\(.*\) = (-?\d+)$", line)
        if m:
            out.append((m.group(1), int(m.group(2)) if int(m.group(2)) < 0 else 0))
    return out


def calls_qemu(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"\d+ Unknown syscall (\d+)$", line)
        if m:
            out.append(("?", None))
            continue
        m = re.match(r"\d+ (\w+)\(", line)
        if m:
            e = re.search(r"\) = -1 errno=(\d+) \(", line)
            out.append((m.group(1), -int(e.group(1)) if e else 0))
    return out


def main():
    reticle, work, src, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(work, exist_ok=True)
    binary = os.path.join(work, os.path.basename(src)[:-2] + "." + ARCH)
    subprocess.run([CC, "-O2", "-static", "-o", binary, src], check=True)
    sim = subprocess.run(["env", "-i", reticle, "sim", "--strace", "--", binary] + args, capture_output=True, text=True)
    qemu = subprocess.run(["env", "-i", QEMU, "-strace", binary] + args, capture_output=True, text=True)
    s, q = calls_sim(sim.stderr), calls_qemu(qemu.stderr)
    fail = 0
    if sim.stdout != qemu.stdout or sim.returncode != qemu.returncode:
        print("FAIL: stdout or status differ (%d, qemu %d)" % (sim.returncode, qemu.returncode))
        fail = 1
    if len(s) != len(q):
        print("FAIL: %d system calls traced, qemu %d" % (len(s), len(q)))
        fail = 1
    for i, ((sn, sr), (qn, qr)) in enumerate(zip(s, q)):
        if qn != "?" and sn != qn:
            print("FAIL: call %d is %s, qemu %s" % (i, sn, qn))
            fail = 1
        elif qn != "?" and qn not in QEMU_LACKS and sr != qr:
            print("FAIL: call %d %s returns %d, qemu %d" % (i, sn, sr, qr))
            fail = 1
    if not fail:
        print("ok: %d system calls named and failing as under %s" % (len(s), QEMU))
    return fail


sys.exit(main())
