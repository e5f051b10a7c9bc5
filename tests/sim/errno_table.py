#!/usr/bin/env python3
"""The o32 errno table (src/sim/linux_o32.c, mips_errno) against the kernel's
headers: every host (asm-generic) errno must reach the guest as the number
arch/mips/include/uapi/asm/errno.h gives it. The headers come with the
cross compilers' linux-libc-dev packages; without them the test is skipped.
    errno_table.py linux_o32.c"""
import os
import re
import sys

GENERIC = ["/usr/include/asm-generic/errno-base.h", "/usr/include/asm-generic/errno.h"]
MIPS = ["/usr/include/asm-generic/errno-base.h", "/usr/mipsel-linux-gnu/include/asm/errno.h"]
ALIASES = {"EWOULDBLOCK", "EDEADLOCK", "ENOTSUP"}   # the host's second names for a number


def parse(paths):
    names = {}
    for path in paths:
        for line in open(path):
            m = re.match(r"#define\s+(E\w+)\s+(\w+)", line)
            if m:
                v = m.group(2)
                names[m.group(1)] = int(v) if v.isdigit() else names.get(v)
    return names


def main():
    if not all(os.path.exists(p) for p in GENERIC + MIPS):
        print("skip: kernel errno headers missing (linux-libc-dev, linux-libc-dev-mipsel-cross)")
        return 77
    host, mips = parse(GENERIC), parse(MIPS)
    src = open(sys.argv[1]).read()
    body = re.search(r"mips_errno\[\] = \{(.*?)\};", src, re.S)
    if not body:
        print("FAIL: no mips_errno table in", sys.argv[1])
        return 1
    table = {n: int(v) for n, v in re.findall(r"\[(E\w+)\]\s*=\s*(\d+)", body.group(1))}
    fail = 0
    for name, hv in sorted(host.items(), key=lambda x: x[1]):
        if name in ALIASES:
            continue
        got = table.get(name, hv)
        if name not in mips:
            print("FAIL: %s (%d) has no MIPS number" % (name, hv))
            fail = 1
        elif got != mips[name]:
            print("FAIL: %s: host %d reaches the guest as %d, MIPS has %d" % (name, hv, got, mips[name]))
            fail = 1
    print("%s: %d host errnos, %d renumbered" % ("FAIL" if fail else "ok", len(host), len(table)))
    return fail


sys.exit(main())
