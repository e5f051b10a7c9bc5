#!/usr/bin/env python3
"""Checks the code pointers `reticle functions --all` finds (computed-goto
and absolute switch tables) against independent evidence.

usage:
  check_codeptr.py RETICLE BINARY table LENGTH [FUNCTION]
      the longest run of consecutive code pointers (8-byte stride) (or,
      with FUNCTION, named by the binary's own symbols, the run with most
      words into it: its cold part takes some) has exactly LENGTH words,
      and objdump shows the function's code referring to the first word
  check_codeptr.py RETICLE BINARY symbol OBJECT FUNCTION
      every word of the data symbol OBJECT (readelf -Ws, a local static
      label table) is a code pointer into FUNCTION
"""
import bisect, collections, json, re, subprocess, sys

def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

def load(reticle, binary):
    d = json.loads(run(reticle, 'functions', '--format', 'json', '--all', binary))
    fs = d['functions']
    addrs = [f['addr'] for f in fs]
    def find(t):
        i = bisect.bisect_right(addrs, t) - 1
        return fs[i] if i >= 0 and t < fs[i]['addr'] + fs[i]['size'] else None
    return d, find

def best_run(cps, score):
    cps = sorted(cps, key=lambda c: c['where'])
    runs, cur = [], []
    for c in cps:
        if cur and c['where'] == cur[-1]['where'] + 8:
            cur.append(c)
        else:
            cur = [c]
            runs.append(cur)
    return max(runs, key=score, default=[])

def check_table(reticle, binary, length, fname):
    d, find = load(reticle, binary)
    into = lambda r: sum(1 for c in r if find(c['target'])['name'] == fname)
    run_ = best_run(d['code_pointers'], into if fname else len)
    owners = collections.Counter(find(c['target'])['name'] for c in run_)
    owner, hits = owners.most_common(1)[0] if owners else ('?', 0)
    if fname:
        owner, hits = fname, owners[fname]
    start = run_[0]['where'] if run_ else 0
    print(f'{binary}: {len(d["code_pointers"])} code pointers; run of {len(run_)} at {start:#x}, '
          f'{hits} into {owner}')
    errors = []
    if len(run_) != length:
        errors.append(f'longest run is {len(run_)} words, expected {length}')
    if fname and owner != fname:
        errors.append(f'table lands in {owner}, expected {fname}')
    f = next((f for f in d['functions'] if f['name'] == owner), None)
    if f:
        dis = run('objdump', '-d', '--no-show-raw-insn', f'--start-address={f["addr"]:#x}',
                  f'--stop-address={f["addr"] + f["size"]:#x}', binary)
        refs = re.findall(r'(?:# |\$?0x)' + f'{start:x}' + r'\b', dis)
        print(f'objdump: {len(refs)} instruction(s) of {owner} refer to {start:#x}')
        if not refs:
            errors.append(f'no instruction of {owner} refers to the table at {start:#x}')
    return errors

def check_symbol(reticle, binary, obj, fname):
    d, find = load(reticle, binary)
    m = re.search(r'^\s*\d+:\s+([0-9a-f]+)\s+(\d+)\s+OBJECT\s+\S+\s+\S+\s+\S+\s+' + re.escape(obj) + r'(\.\d+)?$',
                  run('readelf', '-Ws', binary), re.M)
    if not m:
        return [f'no symbol {obj} in {binary}']
    addr, size = int(m.group(1), 16), int(m.group(2))
    got = {c['where']: c['target'] for c in d['code_pointers']}
    errors = []
    for w in range(addr, addr + size, 8):
        f = find(got[w]) if w in got else None
        if not f or f['name'] != fname:
            errors.append(f'word {w:#x} of {obj} is not a code pointer into {fname}')
    print(f'{binary}: {obj} at {addr:#x}, {size // 8} words checked')
    return errors

def main():
    reticle, binary, mode = sys.argv[1:4]
    if mode == 'table':
        errors = check_table(reticle, binary, int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else None)
    else:
        errors = check_symbol(reticle, binary, sys.argv[4], sys.argv[5])
    for e in errors:
        print('FAIL', e)
    sys.exit(1 if errors else 0)

main()
