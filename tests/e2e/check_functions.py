#!/usr/bin/env python3
"""Compares `reticle functions --format json` with binutils as the oracle.

usage: check_functions.py RETICLE BINARY CHECK...
checks:
  symbols  every STT_FUNC/IFUNC of .symtab with size > 0 in .text (readelf -Ws)
           is a record at the same address with the same size and one of the
           names at that address
  fdes     the FDE count equals readelf's, and every FDE start is a record
           found in eh_frame (with the FDE's range as size unless a symbol sizes it)
  plt      every stub objdump names `x@plt` in .plt/.plt.sec/.plt.got/.iplt is a
           PLT record with that name, and every named PLT record is such a stub
  stripped=UNSTRIPPED
           BINARY is UNSTRIPPED without symbols: every function symbol of
           UNSTRIPPED's .symtab with size > 0 in .text is a record of BINARY
  calls    the target of every direct call in executable sections (objdump -d)
           is the entry of a record
"""
import json, re, subprocess, sys

def run(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True).stdout

def sections(binary):
    out = {}
    for m in re.finditer(r'^\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+\S+\s+(\S*)\s',
                         run('readelf', '-SW', binary), re.M):
        out[m.group(2)] = dict(index=int(m.group(1)), addr=int(m.group(4), 16),
                               size=int(m.group(6), 16), flags=m.group(7))
    return out

def check_symbols(binary, funcs, errors):
    secs = sections(binary)
    text = secs['.text']['index']
    out = run('readelf', '-Ws', binary)
    table = out.split("Symbol table '.symtab'")[1] if "'.symtab'" in out else ''
    names, wanted = {}, []
    for line in table.splitlines():
        f = line.split()
        if len(f) < 8 or f[3] not in ('FUNC', 'IFUNC') or f[6] != str(text):
            continue
        addr, size, name = int(f[1], 16), int(f[2], 0), f[7].split('@')[0]
        names.setdefault(addr, set()).add(name)
        if size > 0:
            wanted.append((addr, size, name))
    for addr, size, name in wanted:
        r = funcs.get(addr)
        if not r:
            errors.append(f'symtab {name} at {addr:#x} not found')
        elif r['name'] not in names[addr]:
            errors.append(f'symtab {name} at {addr:#x} named {r["name"]}')
        elif r['size'] != size and not any(s for a, s, n in wanted if a == addr and s == r['size']):
            errors.append(f'symtab {name} at {addr:#x}: size {r["size"]} != {size}')
        elif 'symtab' not in r['sources']:
            errors.append(f'symtab {name} at {addr:#x}: sources {r["sources"]}')
    return f'{len(wanted)} sized .text symbols'

def check_stripped(unstripped, funcs, errors):
    text = sections(unstripped)['.text']['index']
    out = run('readelf', '-Ws', unstripped).split("Symbol table '.symtab'")[1]
    seen = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or f[3] not in ('FUNC', 'IFUNC') or f[6] != str(text) or int(f[2], 0) == 0:
            continue
        addr = int(f[1], 16)
        seen.add(addr)
        if addr not in funcs:
            errors.append(f'{f[7]} at {addr:#x} (from {unstripped}) not found')
    return f'{len(seen)} function entries of the unstripped file'

def check_fdes(binary, data, funcs, errors):
    out = run('readelf', '--debug-dump=frames', binary, check=False)
    # CIEs with augmentation S (signal frames) start their FDEs one byte
    # before the trampoline (glibc's ".LSTART_name-1"): the entry is pc+1.
    signal, cie = set(), None
    for line in out.splitlines():
        m = re.match(r'^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE', line)
        if m:
            cie = m.group(1)
        elif line.strip().startswith('Augmentation:') and 'S' in line.split(':', 1)[1] and cie:
            signal.add(cie)
        elif ' FDE ' in line:
            cie = None
    fdes = []
    for cie, a, b in re.findall(r' FDE cie=(\S+) pc=([0-9a-f]+)\.\.([0-9a-f]+)', out):
        lo, hi = int(a, 16), int(b, 16)
        if lo:
            fdes.append((lo + 1, hi) if cie in signal else (lo, hi))
    if len(fdes) != data['fde_count']:
        errors.append(f'FDE count {data["fde_count"]} != readelf {len(fdes)}')
    for lo, hi in fdes:
        r = funcs.get(lo)
        if not r and lo % 16:  # an FDE opened before alignment padding
            r = funcs.get((lo + 15) & ~15)
            hi = lo = (lo + 15) & ~15 if r else lo
            hi = lo + (r['size'] if r else 0)
        if not r or 'eh_frame' not in r['sources']:
            errors.append(f'FDE at {lo:#x} not found')
        elif not ({'symtab', 'dynsym', 'plt'} & set(r['sources'])) and r['size'] != hi - lo:
            errors.append(f'FDE at {lo:#x}: size {r["size"]} != {hi - lo}')
    return f'{len(fdes)} FDEs'

def check_plt(binary, funcs, errors):
    secs = [s for s in ('.plt', '.plt.sec', '.plt.got', '.iplt') if s in sections(binary)]
    stubs = {}
    for s in secs:
        for m in re.finditer(r'^([0-9a-f]+) <(.+@plt)>:', run('objdump', '-d', '-j', s, binary), re.M):
            stubs[int(m.group(1), 16)] = m.group(2)
    for addr, name in stubs.items():
        r = funcs.get(addr)
        if not r or r['name'] != name or 'plt' not in r['sources']:
            errors.append(f'PLT stub {name} at {addr:#x}: got {r and r["name"]}')
    for addr, r in funcs.items():
        # objdump leaves the ifunc stubs of static executables unnamed
        if 'plt' in r['sources'] and r['name'] != 'PLT0' and addr not in stubs \
                and not r['name'].startswith('*ABS*'):
            errors.append(f'PLT record {r["name"]} at {addr:#x} unknown to objdump')
    return f'{len(stubs)} PLT stubs'

def check_calls(binary, funcs, errors):
    allsecs = sections(binary)
    secs = [n for n, s in allsecs.items() if 'X' in s['flags']]
    args = ['objdump', '-d', '--no-show-raw-insn']
    for s in secs:
        args += ['-j', s]
    targets = set(int(t, 16) for t in re.findall(r'\scall\s+(?:0x)?([0-9a-f]+)(?:\s|$)', run(*args, binary), re.M))
    targets.discard(0)  # calls to undefined weak symbols
    # objdump's linear sweep decodes data in .text too: a "call" whose target
    # is in no executable section is such an artifact, not a function
    targets = {t for t in targets
               if any(allsecs[n]['addr'] <= t < allsecs[n]['addr'] + allsecs[n]['size'] for n in secs)}
    for t in sorted(targets):
        if t not in funcs:
            errors.append(f'call target {t:#x} is not a function entry')
    return f'{len(targets)} call targets'

def main():
    reticle, binary, checks = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = json.loads(run(reticle, 'functions', '--format', 'json', binary))
    funcs = {f['addr']: f for f in data['functions']}
    errors, summary = [], []
    for c in checks:
        if c == 'symbols':
            summary.append(check_symbols(binary, funcs, errors))
        elif c == 'fdes':
            summary.append(check_fdes(binary, data, funcs, errors))
        elif c == 'plt':
            summary.append(check_plt(binary, funcs, errors))
        elif c.startswith('stripped='):
            summary.append(check_stripped(c[9:], funcs, errors))
        elif c == 'calls':
            summary.append(check_calls(binary, funcs, errors))
        else:
            sys.exit(f'unknown check {c}')
    print(f'{binary}: {len(funcs)} functions; checked ' + ', '.join(summary))
    for e in errors[:30]:
        print('FAIL', e)
    if errors:
        print(f'{len(errors)} mismatches')
        sys.exit(1)

main()
