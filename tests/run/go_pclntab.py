#!/usr/bin/env python3
"""Go's function table (.gopclntab) against Go's symbols, for programs built
twice, with symbols and without (go build -ldflags='-s -w', or a copy run
through strip). Every Go function nm lists in the unstripped build (a text
symbol, T or t, with a size, in [runtime.text, runtime.etext); not the
linker's markers, go:textfipsstart and go:textfipsend of Go 1.24, which
hold no code) is a
function of the stripped build's `reticle functions` found in its
gopclntab, with that address, size and name, and instrumentable as reticle
finds the unstripped build's; and there is no other gopclntab function.
The table spells names as Go's runtime does: without the ".abi0" that nm
shows on the ABI0 half of an ABI wrapper pair, with "·" where nm shows "."
(Go 1.20+), and up to Go 1.20 or so with "[...]" for what lies between a
name's first '[' and its last ']' (type arguments, array types); nm's
names are read so.

With --counts, each build also runs under `reticle run -c fcount`: both
print what the stripped one prints natively, and the calls of every
function of package main (deterministic, unlike the runtime's) are the
same in both profiles.

usage: go_pclntab.py RETICLE WORKDIR [--counts] PROGRAM...
PROGRAM is UNSTRIPPED=STRIPPED, or UNSTRIPPED alone: a copy is stripped
with strip into WORKDIR. An unstripped program that is missing or has no
symbols (an installed one: docker) is skipped; with none checked, exit 77
(skip)."""
import json, os, sqlite3, subprocess, sys


def plain(name):
    """NAME without ".abi0", "·" read as "."."""
    return (name[:-len(".abi0")] if name.endswith(".abi0") else name).replace("·", ".")


def go_names(name):
    """Symbol NAME as Go's function table may spell it (cmd/link's
    funcnametab), "·" read as "."."""
    name = plain(name)
    i, j = name.find("["), name.rfind("]")
    return {name, name[:i] + "[...]" + name[j + 1:]} if 0 <= i < j else {name}


def nm_functions(path):
    """{address: {(name, size)}} of the Go functions nm lists."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    marks, syms = {}, []
    for line in out.splitlines():
        f = line.split(" ", 3)
        if len(f) == 3 and f[2] in ("runtime.text", "runtime.etext"):
            marks[f[2]] = int(f[0], 16)
        elif len(f) == 4 and f[2] in "Tt" and f[3] not in ("go:textfipsstart", "go:textfipsend"):
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    if len(marks) != 2:
        return None
    funcs = {}
    for addr, size, name in syms:
        if marks["runtime.text"] <= addr < marks["runtime.etext"]:
            funcs.setdefault(addr, set()).update((n, size) for n in go_names(name))
    return funcs


def reticle_functions(reticle, path):
    r = subprocess.run([reticle, "functions", "--format", "json", "--no-demangle", path],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: reticle functions {path}: {r.stderr}")
    return {f["addr"]: f for f in json.loads(r.stdout)["functions"]}


def check(reticle, unstripped, stripped, want):
    ours = reticle_functions(reticle, unstripped)
    got = reticle_functions(reticle, stripped)
    table = {a: f for a, f in got.items() if "gopclntab" in f["sources"]}
    bad = []
    for addr, syms in sorted(want.items()):
        f = table.get(addr)
        if not f:
            bad.append(f"{addr:#x} {sorted(syms)}: not in the table's functions")
        elif (plain(f["name"]), f["size"]) not in syms:
            bad.append(f"{addr:#x}: {f['name']} ({f['size']} bytes), nm: {sorted(syms)}")
        elif addr in ours and ours[addr]["instrumentable"] != f["instrumentable"]:
            bad.append(f"{addr:#x} {f['name']}: instrumentable {f['instrumentable']}, "
                       f"with symbols {ours[addr]['instrumentable']} ({ours[addr]['reason']})")
    bad += [f"{a:#x} {f['name']}: not a Go symbol" for a, f in sorted(table.items()) if a not in want]
    for b in bad[:20]:
        print("FAIL:", b)
    if bad:
        sys.exit(f"FAIL: {stripped}: {len(bad)} of {len(want)} functions differ")
    n = sum(f["instrumentable"] for f in table.values())
    print(f"ok: {stripped}: {len(table)} functions as nm lists them in {unstripped}, "
          f"{n} instrumentable")


def main_counts(reticle, work, prog):
    """The fcount run of PROG, the calls of package main's functions by
    name, and how many of the runtime's were counted."""
    db = os.path.join(work, os.path.basename(prog) + ".db")
    r = subprocess.run([reticle, "run", "-c", "fcount", "-o", db, "--", prog], capture_output=True)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT name, calls FROM functions WHERE name LIKE 'main.%'").fetchall()
    runtime = con.execute("SELECT count(*) FROM functions WHERE name LIKE 'runtime.%' AND calls > 0").fetchone()[0]
    con.close()
    return r, {plain(n): c for n, c in rows}, runtime


def compare_counts(reticle, work, unstripped, stripped):
    native = subprocess.run([stripped], capture_output=True)
    got = {}
    for prog in (unstripped, stripped):
        r, counts, runtime = main_counts(reticle, work, prog)
        if r.stdout != native.stdout or r.returncode != native.returncode:
            sys.exit(f"FAIL: {prog} under reticle: exit {r.returncode}, {r.stdout!r}; natively exit "
                     f"{native.returncode}, {native.stdout!r}\n{r.stderr.decode(errors='replace')[-2000:]}")
        got[prog] = counts
        print(f"ok: {prog}: {sum(c > 0 for c in counts.values())} functions of main and {runtime} of "
              f"the runtime counted")
    if got[unstripped] != got[stripped] or not any(got[stripped].values()):
        for name in sorted(set(got[unstripped]) | set(got[stripped])):
            print(f"  {name}: {got[unstripped].get(name)} with symbols, {got[stripped].get(name)} without")
        sys.exit(f"FAIL: {stripped}: package main's calls differ from {unstripped}'s")


def main():
    reticle, work, progs = sys.argv[1], sys.argv[2], sys.argv[3:]
    counts = "--counts" in progs
    progs = [p for p in progs if p != "--counts"]
    os.makedirs(work, exist_ok=True)
    checked = 0
    for prog in progs:
        unstripped, _, stripped = (os.path.abspath(p) if p else p for p in prog.partition("="))
        want = nm_functions(unstripped) if os.path.exists(unstripped) else None
        if not want:
            print(f"skip: no {unstripped}, or no Go symbols in it")
            continue
        if not stripped:
            stripped = os.path.join(work, os.path.basename(unstripped) + ".stripped")
            subprocess.run(["strip", "-o", stripped, unstripped], check=True)
        check(reticle, unstripped, stripped, want)
        if counts:
            compare_counts(reticle, work, unstripped, stripped)
        checked += 1
    sys.exit(0 if checked else 77)


main()
