#!/usr/bin/env python3
"""Robustness of the ELF loader: copies of a small static program with bytes
of the ELF header and program headers changed must be refused with a
message, or run (the guest may die of a signal, which reticle reports);
reticle itself must never crash or hang.
usage: fuzz_elf.py RETICLE PROGRAM WORKDIR"""
import os, random, struct, subprocess, sys

reticle, prog, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
data = open(prog, 'rb').read()
is64 = data[4] == 2
phoff = struct.unpack_from('<Q' if is64 else '<I', data, 32 if is64 else 28)[0]
phnum = struct.unpack_from('<H', data, 56 if is64 else 44)[0]
hot = list(range(0, 64)) + list(range(phoff, phoff + phnum * (56 if is64 else 32)))
rng = random.Random(7)
bad = 0
for k in range(250):
    t = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        i = rng.choice(hot)
        t[i] = rng.choice([0, 0xff, 0x7f, 0x80, rng.randrange(256)])
    if k % 25 == 0:
        t = t[:rng.randrange(len(t))]
    path = os.path.join(work, 'case')
    open(path, 'wb').write(t)
    os.chmod(path, 0o755)
    try:
        r = subprocess.run([reticle, 'sim', '--', path], capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        continue   # a program changed into an endless loop: not the loader's fault
    err = r.stderr.decode(errors='replace')
    # reticle killed by a signal of its own, or a sanitizer report: a bug;
    # refusals say 'reticle: ...' and exit 1; guests may exit with anything
    crashed = r.returncode < 0 or 'Sanitizer' in err or 'runtime error' in err
    silent_refusal = r.returncode == 1 and 'reticle:' not in err
    if crashed or silent_refusal:
        bad += 1
        keep = os.path.join(work, 'crash%d' % bad)
        open(keep, 'wb').write(t)
        print('FAIL: status %d on %s: %s' % (r.returncode, keep, err[-300:]))
print('250 cases, %d failures' % bad)
sys.exit(1 if bad else 0)
