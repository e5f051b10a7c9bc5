#!/usr/bin/env python3
"""Checks the mix, bbcount and branch tools against qemu's executed-address
trace and objdump's decoding (both independent of reticle).
usage: oracle.py OBJDUMP_OUTPUT QEMU_PCS RETICLE_STDERR"""
import re, sys
from collections import Counter

objdump, pcs_file, err_file = sys.argv[1:4]
insns = {}   # addr -> (mnemonic, length)
for line in open(objdump):
    m = re.match(r'^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t(\S+)', line)
    if m:
        insns[int(m.group(1), 16)] = (m.group(3), len(m.group(2).replace(' ', '')) // 2)
trace = [int(l, 16) for l in open(pcs_file) if l.strip()]
err = open(err_file).read()
fail = 0

want = Counter(insns[a][0] for a in trace)
got = Counter({m.group(1): int(m.group(2)) for m in re.finditer(r'^mix: (\S+)\s+(\d+)\s', err, re.M)})
if want != got:
    print('FAIL mix:', sorted((want - got).items()), sorted((got - want).items()))
    fail = 1

def ends_block(mn):
    mn = mn.split('.')[-1] if mn.startswith('c.') else mn
    return mn in ('beq', 'bne', 'blt', 'bge', 'bltu', 'bgeu', 'jal', 'jalr', 'ecall', 'ebreak',
                  'j', 'jr', 'beqz', 'bnez')
blocks = sum(1 for a in trace if ends_block(insns[a][0]))
m = re.search(r'^bbcount: (\d+) blocks traversed', err, re.M)
if not m or int(m.group(1)) != blocks:
    print('FAIL bbcount: want', blocks, 'got', m and m.group(1))
    fail = 1

cond = ('beq', 'bne', 'blt', 'bge', 'bltu', 'bgeu', 'c.beqz', 'c.bnez')
taken = nottaken = 0
for a, nxt in zip(trace, trace[1:]):
    mn, ln = insns[a]
    if mn in cond:
        if nxt == a + ln:
            nottaken += 1
        else:
            taken += 1
m = re.search(r'^branch: \d+ conditional branch sites executed: (\d+) taken, (\d+) not taken', err, re.M)
if not m or (int(m.group(1)), int(m.group(2))) != (taken, nottaken):
    print('FAIL branch: want', taken, nottaken, 'got', m and m.groups())
    fail = 1
loads = {'lb', 'lh', 'lw', 'ld', 'lbu', 'lhu', 'lwu', 'c.lw', 'c.ld', 'c.lwsp', 'c.ldsp', 'flw', 'fld',
         'c.fld', 'c.fldsp'}
stores = {'sb', 'sh', 'sw', 'sd', 'c.sw', 'c.sd', 'c.swsp', 'c.sdsp', 'fsw', 'fsd', 'c.fsd', 'c.fsdsp'}
nl = sum(1 for a in trace if insns[a][0] in loads)
ns = sum(1 for a in trace if insns[a][0] in stores)
m = re.search(r'^cache: .* \((\d+) reads, (\d+) writes\)', err, re.M)
if not m or (int(m.group(1)), int(m.group(2))) != (nl, ns):
    print('FAIL cache accesses: want', nl, ns, 'got', m and m.groups())
    fail = 1
if not fail:
    print('ok: %d loads, %d stores;' % (nl, ns), end=' ')
    print('ok: mix (%d kinds), %d blocks, %d taken / %d not taken' % (len(want), blocks, taken, nottaken))
sys.exit(fail)
