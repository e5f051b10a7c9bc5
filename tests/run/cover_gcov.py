#!/usr/bin/env python3
"""cover against gcov: the lines reticle's lcov export says ran are gcov's.

  cover_gcov.py RETICLE WORKDIR SOURCE.c [SOURCE.c ...] [--cflags FLAGS] [--stdin FILE]
                [--plain-only] -- ARGS...

Builds the sources twice in WORKDIR, -O0 --coverage (gcov's build) and -O0
-g, runs the coverage build natively (gcov -j reads its counts), then under
`reticle run -c cover` both builds, cold and warm: same output and exit
status as native, and `reticle report --format lcov` must give the same set
of executed lines (count > 0) and of lines with code as gcov for every
source file, and the same functions entered. The coverage build run under
reticle must also leave the same .gcda counts as the native run (not with
--plain-only: in a larger --coverage build gcov's counter updates share
blocks with return statements, and their lines then read as run). genhtml,
when installed, must render the tracefile."""
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, cwd, stdin_path, env=None):
    with open(stdin_path or os.devnull, "rb") as stdin:
        p = subprocess.run(cmd, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


def gcov_lines(work, sources):
    """{file: {line: count}} and {function name: count} from gcov -j."""
    for old in glob.glob(os.path.join(work, "*.gcov.json.gz")):
        os.remove(old)
    gcdas = sorted(glob.glob(os.path.join(work, "*.gcda")))
    if not gcdas:
        fail("no .gcda written")
    subprocess.run(["gcov", "-j"] + gcdas, cwd=work, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    lines, funcs = {}, {}
    for path in glob.glob(os.path.join(work, "*.gcov.json.gz")):
        with gzip.open(path) as f:
            doc = json.load(f)
        for fl in doc["files"]:
            name = os.path.realpath(os.path.join(doc.get("current_working_directory", work), fl["file"]))
            if name not in sources:
                continue
            per = lines.setdefault(name, {})
            for ln in fl["lines"]:
                per[ln["line_number"]] = per.get(ln["line_number"], 0) + ln["count"]
            for fn in fl.get("functions", []):
                funcs[fn["name"]] = funcs.get(fn["name"], 0) + fn["execution_count"]
    return lines, funcs


def lcov_lines(text, sources):
    lines, funcs, sf = {}, {}, None
    for raw in text.splitlines():
        if raw.startswith("SF:"):
            sf = os.path.realpath(raw[3:])
        elif sf in sources and raw.startswith("DA:"):
            n, c = raw[3:].split(",")[:2]
            lines.setdefault(sf, {})[int(n)] = int(c)
        elif sf in sources and raw.startswith("FNDA:"):
            c, name = raw[5:].split(",", 1)
            funcs[name] = funcs.get(name, 0) + int(c)
    return lines, funcs


def compare(what, gcov, ours):
    bad = []
    for f in sorted(set(gcov) | set(ours)):
        g, o = gcov.get(f, {}), ours.get(f, {})
        ran_g = {n for n, c in g.items() if c > 0}
        ran_o = {n for n, c in o.items() if c > 0}
        base = os.path.basename(f)
        if ran_g != ran_o:
            bad.append(f"{base}: executed only by gcov {sorted(ran_g - ran_o)[:12]},"
                       f" only by reticle {sorted(ran_o - ran_g)[:12]}")
        if set(g) != set(o):
            bad.append(f"{base}: lines with code only in gcov {sorted(set(g) - set(o))[:12]},"
                       f" only in reticle {sorted(set(o) - set(g))[:12]}")
    if bad:
        fail(f"{what}:\n  " + "\n  ".join(bad))
    return sum(len([c for c in v.values() if c > 0]) for v in ours.values())


def main():
    args = sys.argv[1:]
    sep = args.index("--")
    prog_args = args[sep + 1:]
    args = args[:sep]
    reticle, work = os.path.realpath(args[0]), os.path.realpath(args[1])
    cflags, stdin_path, sources, binaries = [], None, [], ("dbg", "cov")
    i = 2
    while i < len(args):
        if args[i] == "--cflags":
            cflags = args[i + 1].split()
            i += 2
        elif args[i] == "--plain-only":
            binaries = ("dbg",)
            i += 1
        elif args[i] == "--stdin":
            stdin_path = os.path.realpath(args[i + 1])
            i += 2
        else:
            sources.append(os.path.realpath(args[i]))
            i += 1
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # the same length of argv[0] for both builds
    for out, flags in (("cov", ["--coverage", "-g"]), ("dbg", ["-g"])):
        subprocess.run(["gcc", "-O0", "-w"] + flags + cflags + ["-o", out] + sources + ["-lm"],
                       cwd=work, check=True)
    native = run(["./cov"] + prog_args, work, stdin_path)
    want_lines, want_funcs = gcov_lines(work, set(sources))
    want_gcda = {os.path.basename(p): open(p, "rb").read() for p in glob.glob(os.path.join(work, "*.gcda"))}
    ran = sum(len([c for c in v.values() if c > 0]) for v in want_lines.values())
    for binary in binaries:
        for mode in ("cold", "warm"):
            for p in glob.glob(os.path.join(work, "*.gcda")):
                os.remove(p)
            prof = os.path.join(work, f"{binary}_{mode}.db")
            got = run([reticle, "run", "-c", "cover", "-o", prof, "--", "./" + binary] + prog_args,
                      work, stdin_path)
            if (got[0], got[1]) != native[:2]:
                fail(f"{binary} {mode}: status {got[0]} vs {native[0]}, or different output;"
                     f" stderr: {got[2].decode(errors='replace')[-400:]}")
            rep = subprocess.run([reticle, "report", "--format", "lcov", prof], cwd=work,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if rep.returncode:
                fail(f"report --format lcov: {rep.stderr}")
            lines, funcs = lcov_lines(rep.stdout, set(sources))
            n = compare(f"{binary} {mode}", want_lines, lines)
            hit_g = {f for f, c in want_funcs.items() if c > 0}
            hit_o = {f for f, c in funcs.items() if c > 0}
            if hit_g != hit_o:
                fail(f"{binary} {mode}: functions entered only by gcov {sorted(hit_g - hit_o)},"
                     f" only by reticle {sorted(hit_o - hit_g)}")
            if binary == "cov":
                gcda = {os.path.basename(p): open(p, "rb").read()
                        for p in glob.glob(os.path.join(work, "*.gcda"))}
                if gcda != want_gcda:
                    fail(f"cov {mode}: the program's own .gcda counts differ from the native run's")
            info = os.path.join(work, f"{binary}_{mode}.info")
            with open(info, "w") as f:
                f.write(rep.stdout)
            if shutil.which("genhtml"):
                g = subprocess.run(["genhtml", "-q", "-o", os.path.join(work, "html"), info],
                                   cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if g.returncode:
                    fail(f"genhtml: {g.stdout[-600:]}")
            print(f"ok {binary} {mode}: {n} executed lines, as gcov ({ran}); {len(hit_o)} functions")
    # a profile without block counts: a clear error, no output file
    prof = os.path.join(work, "fcount.db")
    run([reticle, "run", "-c", "fcount", "-o", prof, "--", "./dbg"] + prog_args, work, stdin_path)
    out = os.path.join(work, "fcount.info")
    p = subprocess.run([reticle, "report", "--format", "lcov", "-o", out, prof],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 1 or "no block counts" not in p.stderr or os.path.exists(out):
        fail(f"lcov of an fcount profile: status {p.returncode}, {p.stderr.strip()}")
    print("ok: lcov of a profile without blocks is refused")


if __name__ == "__main__":
    main()
