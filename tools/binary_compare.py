#!/usr/bin/env python3
"""Compares what two builds of reticle's binary analyzer find: `reticle
functions --all` (functions, segments, code pointers) in text and JSON, and
its exit status, byte for byte. For a change that must not alter any result
(a faster analyzer, say): build the old tree apart (git worktree) and run

  tools/binary_compare.py OLD/build/src/reticle build/src/reticle FILE...

--variants N also compares N seeded corruptions of each FILE (flips in the
headers and parsed sections, extreme values, truncations, as
tests/unit/test_binary_fuzz.c does), so the error paths agree too.
Prints one line per difference; exits 1 if there is any."""
import argparse
import os
import random
import struct
import subprocess
import sys
import tempfile


def run(reticle, path, fmt):
    p = subprocess.run([reticle, "functions", "--all", "--format", fmt, path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # the error message names the binary that failed, not which build ran
    return p.returncode, p.stdout, p.stderr


def compare(old, new, path, label):
    for fmt in ("text", "json"):
        a, b = run(old, path, fmt), run(new, path, fmt)
        if a != b:
            what = "exit status" if a[0] != b[0] else "stdout" if a[1] != b[1] else "stderr"
            print(f"DIFF {label} ({fmt}): {what}")
            return False
    return True


def ranges(img):
    """File ranges worth hitting: headers and non-code sections."""
    out = [(0, 64)]
    if len(img) < 64 or img[:4] != b"\x7fELF":
        return out
    phoff, shoff = struct.unpack_from("<QQ", img, 32)
    phnum, shnum = struct.unpack_from("<H", img, 56)[0], struct.unpack_from("<H", img, 60)[0]
    out += [(phoff, phnum * 56), (shoff, shnum * 64)]
    for i in range(shnum):
        at = shoff + i * 64
        if at + 64 > len(img):
            break
        _, typ, flags, _, off, size = struct.unpack_from("<IIQQQQ", img, at)
        if typ != 8 and not flags & 4:   # not NOBITS, not executable
            out.append((off, size))
    return [(o, min(n, len(img) - o)) for o, n in out if o < len(img) and n]


def mutate(img, rng, rs):
    kind, count = rng.randrange(4), 1 + rng.randrange(8)
    if kind == 0:
        return img[:rng.randrange(len(img))]
    img = bytearray(img)
    for _ in range(count):
        off, n = rs[rng.randrange(len(rs))]
        at = rng.randrange(len(img)) if kind == 1 else off + rng.randrange(n)
        if kind == 3 and at + 8 <= len(img):
            v = rng.choice([0, 2**64 - 1, 0x7fffffff, 0x80000000, 0xffffffff, 1])
            at &= ~3
            width = rng.choice([4, 8])
            img[at:at + width] = (v & (2**(8 * width) - 1)).to_bytes(width, "little")
        else:
            img[at] ^= 1 << rng.randrange(8)
    return bytes(img)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--variants", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ok = same = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.files:
            ok += 1
            same += compare(args.old, args.new, path, path)
            if not args.variants:
                continue
            img = open(path, "rb").read()
            rs, rng = ranges(img), random.Random(f"{args.seed}:{os.path.basename(path)}")
            for v in range(args.variants):
                var = os.path.join(tmp, "variant")
                with open(var, "wb") as f:
                    f.write(mutate(img, rng, rs))
                ok += 1
                same += compare(args.old, args.new, var, f"{path} variant {v}")
    print(f"{same} of {ok} files identical")
    return 0 if same == ok else 1


if __name__ == "__main__":
    sys.exit(main())
