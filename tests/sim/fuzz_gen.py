#!/usr/bin/env python3
"""Robustness of reticle-nmlgen: truncated and mutated copies of the shipped
descriptions must be rejected with a message (exit 1) or accepted (exit 0),
never crash (a signal, or a sanitizer report in RETICLE_SANITIZE builds).
usage: fuzz_gen.py NMLGEN WORKDIR DESCRIPTION... (deterministic: seeded;
FUZZ_CASES=N per description, default 200: fewer for sanitizer builds)"""
import os, random, subprocess, sys

gen, work, descs = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(work, exist_ok=True)
rng = random.Random(4)
tokens = [b'(', b')', b'{', b'}', b';', b'<', b'..', b'>', b'=', b'|', b'"', b'%', b'::', b'if', b'endif',
          b'op', b'mode', b'card', b'format', b'x.image', b'0b101', b'99999999999999999999', b'\xe2\x80\x9c']
cases = 0
bad = 0
for d in descs:
    text = open(d, 'rb').read()
    total = int(os.environ.get('FUZZ_CASES', '200'))
    variants = [text[:rng.randrange(len(text))] for _ in range(total * 3 // 10)]
    for _ in range(total - len(variants)):
        t = bytearray(text)
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(t))
            if rng.random() < 0.5:
                t[i:i + rng.randrange(1, 12)] = b''
            else:
                t[i:i] = rng.choice(tokens)
        variants.append(bytes(t))
    for k, v in enumerate(variants):
        path = os.path.join(work, 'case.nml')
        open(path, 'wb').write(v)
        try:
            r = subprocess.run([gen, '--check', path], capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            bad += 1
            keep = os.path.join(work, 'slow%d.nml' % bad)
            open(keep, 'wb').write(v)
            print('FAIL: over 30 s on %s' % keep)
            continue
        cases += 1
        err = r.stderr.decode(errors='replace')
        if r.returncode not in (0, 1) or 'Sanitizer' in err or 'runtime error' in err:
            bad += 1
            keep = os.path.join(work, 'crash%d.nml' % bad)
            open(keep, 'wb').write(v)
            print('FAIL: exit %d on %s: %s' % (r.returncode, keep, err[-300:]))
        elif r.returncode == 1 and ': error: ' not in err:
            bad += 1
            print('FAIL: rejected without a located message: %s' % err[-200:])
print('%d cases, %d failures' % (cases, bad))
sys.exit(1 if bad else 0)
