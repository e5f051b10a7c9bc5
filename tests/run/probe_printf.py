#!/usr/bin/env python3
"""reticle probe's printf(): a line per hit where the clause's predicate
holds, printed by reticle from the copy's RTL_PRIM_CALL trap, against what
the program (programs/call_args.c) calls by construction.

usage: probe_printf.py RETICLE WORKDIR PROGRAM

PROGRAM N MIN calls work(i, i*i, 7) for i in 0..N-1 (two threads), then
label("first", 1) and label("second words", -2). The clauses print work's
arguments where arg0 >= MIN (with a cast and tid), its return value where
it is above a bound (exit:), and label's string argument (str()), number
and function name (func) beside a count. Every expected line, no other;
the program's output and exit status its own; bad printf()s refused with
their line and column."""
import collections, os, re, shutil, subprocess, sys

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def main():
    reticle, work, prog = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    n, lo, above = 3000, 2990, 1990
    out = os.path.join(work, "out.txt")
    text = ('entry:work /arg0 >= %d/ { printf("w %%d %%ld %%x tid %%d\\n", arg0, arg1, (int)arg2, tid); }\n'
            'exit:work /retval > %d/ { printf("r %%d\\n", retval); }\n'
            'entry:label { printf("label [%%s] %%d %%s\\n", str(arg0), arg1, func); @labels = count(); }\n'
            % (lo, above))
    native = subprocess.run([prog, str(n), str(lo)], capture_output=True, text=True)
    r = subprocess.run([reticle, "probe", "-r", out, text, "--", prog, str(n), str(lo)], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "c")))
    if (r.returncode, r.stdout) != (native.returncode, native.stdout):
        fail(f"exit {r.returncode}, output {r.stdout!r}; natively {native.returncode} {native.stdout!r}: "
             f"{r.stderr[-1000:]}")
    got = collections.Counter(open(out).read().splitlines())
    want = collections.Counter()
    for i in range(n):
        if i >= lo:
            want["w %d %d 7 tid" % (i, i * i)] += 1
        ret = i + (i * i) % 1000 + 7
        if ret > above:
            want["r %d" % ret] += 1
    want["label [first] 1 label"] += 1
    want["label [second words] -2 label"] += 1
    want["@labels: 2"] += 1
    got_w = collections.Counter(re.sub(r" tid \d+$", " tid", k) for k in got.elements())
    if got_w != want:
        fail(f"lines: missing {sorted((want - got_w).elements())[:6]}, extra {sorted((got_w - want).elements())[:6]}")
    tids = {re.search(r" tid (\d+)$", k).group(1) for k in got if k.startswith("w ")}
    if len(tids) != 1:   # i >= MIN all in the second thread
        fail(f"work's lines came from threads {tids}")
    print(f"ok: {sum(got.values())} lines, as the program's calls say ({sum(want.values())})")
    bad = {'entry:work { printf("%d %d\\n", arg0); }': "2 conversions and printf() 1",
           'entry:work { printf("%s\\n", arg0); }': "does not fit %s",
           'entry:work { printf("%d\\n", retval); }': "retval is read in exit",
           'entry:work { printf("%q\\n", arg0); }': "conversion printf() does not take",
           'entry:work { printf("unterminated); }': "no closing",
           'entry:work { printf("%d\\n", sink); }': "printf() reads func"}
    for prog_text, why in bad.items():
        r = subprocess.run([reticle, "probe", prog_text, "--", prog, "10", "5"], capture_output=True, text=True)
        if r.returncode != 2 or why not in r.stderr or "line 1, column" not in r.stderr:
            fail(f"{prog_text!r}: exit {r.returncode}, {r.stderr.strip()!r} (want {why!r})")
    print("FAILED" if fails else "OK")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
