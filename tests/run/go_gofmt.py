#!/usr/bin/env python3
"""Debian's gofmt, a stripped Go program (no .symtab, no .eh_frame: its
functions come from Go's function table), as a new user would run it:
`gofmt -l DIR` over a folder of Go files, some formatted, some not, one
that does not parse, under `reticle run -c fcount` (same_output.py: the
same stdout and exit status, 2, as natively, cold and warm). The oracle
for the counts is the folder: gofmt reads each .go file with processFile,
once, and lists the unformatted ones (their count: the lines of stdout).

usage: go_gofmt.py RETICLE WORKDIR [GOFMT]   (default /usr/bin/gofmt)
Exits 77 (skip) when there is no gofmt."""
import os, shutil, subprocess, sys

reticle, work = sys.argv[1], sys.argv[2]
gofmt = sys.argv[3] if len(sys.argv) > 3 else "/usr/bin/gofmt"
if not os.access(gofmt, os.X_OK):
    print(f"SKIP: no {gofmt} (apt-get install golang-go)")
    sys.exit(77)

files = {
    "ok.go": "package p\n\nfunc Add(a, b int) int { return a + b }\n",
    "messy.go": "package p\nfunc  Sub(a,b int)int{\nreturn a-b}\n",
    "broken.go": "package p\n\nfunc Broken( {\n",
    "sub/more.go": "package sub\nimport \"fmt\"\nfunc Hi(){fmt.Println( \"hi\" )}\n",
    "sub/fine.go": "package sub\n\nvar X = 1\n",
    "sub/notes.txt": "not Go\n",
}
src = os.path.join(work, "src")
shutil.rmtree(src, ignore_errors=True)
for name, text in files.items():
    os.makedirs(os.path.dirname(os.path.join(src, name)), exist_ok=True)
    with open(os.path.join(src, name), "w") as f:
        f.write(text)
ngo = sum(n.endswith(".go") for n in files)
native = subprocess.run([gofmt, "-l", src], capture_output=True, text=True)
if native.returncode != 2 or len(native.stdout.splitlines()) != 2:
    sys.exit(f"FAIL: native gofmt -l: exit {native.returncode}, {native.stdout!r} {native.stderr!r}")
same = os.path.join(os.path.dirname(os.path.abspath(__file__)), "same_output.py")
sys.exit(subprocess.run([sys.executable, same, reticle, work, "--collectors", "fcount",
                         "--calls", f"main.processFile={ngo}", "--calls", "main.gofmtMain=1",
                         "--", gofmt, "-l", src]).returncode)
