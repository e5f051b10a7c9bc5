#!/usr/bin/env python3
"""reticle functions --format json on symbol names that are not UTF-8.

usage: functions_json_bytes.py RETICLE CC WORKDIR

Symbol names are bytes: a program whose function is named
"bad\\xff\\xfe_name\\xc3\\xa9" (an asm label) gives JSON that a strict reader
parses, where that function (at the address nm gives) has the name of
those bytes decoded as UTF-8 with each invalid byte replaced (U+FFFD), the
valid é kept."""
import json, os, subprocess, sys

reticle, cc, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
src, exe = os.path.join(work, "names.c"), os.path.join(work, "names")
with open(src, "wb") as f:
    f.write(b'int bad(int x) __asm__("bad\\xff\\xfe_name\\xc3\\xa9");\n'
            b"int bad(int x) { return x * 3; }\n"
            b"int main(int c, char **v) { (void)v; return bad(c) == 3 ? 0 : 1; }\n")
subprocess.run([cc, "-O1", "-o", exe, src], check=True)
raw = b"bad\xff\xfe_name\xc3\xa9"
nm = subprocess.run(["nm", exe], capture_output=True, check=True).stdout
addr = next(int(line.split()[0], 16) for line in nm.splitlines() if line.endswith(b" " + raw))
out = subprocess.run([reticle, "functions", "--format", "json", exe], capture_output=True, check=True).stdout
fails = 0
try:
    d = json.loads(out.decode("utf-8"))   # strict: invalid UTF-8 or escapes raise
    got = [f["name"] for f in d["functions"] if (int(f["addr"], 16) if isinstance(f["addr"], str) else f["addr"]) == addr]
    want = raw.decode("utf-8", errors="replace")
    if got != [want]:
        print(f"FAIL: the function at {addr:#x} is {got}, not [{want!r}]")
        fails += 1
except (UnicodeDecodeError, ValueError) as e:
    print(f"FAIL: not JSON: {e}")
    fails += 1
print(f"{fails} failure(s)")
sys.exit(1 if fails else 0)
