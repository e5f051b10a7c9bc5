#!/usr/bin/env python3
"""A foreign test suite under reticle: CPython's own regression tests
(Debian's libpython3.11-testsuite) give the same results natively and under
`reticle run` with fcount, bbcount and cover. The native run is the oracle: the same
modules must pass, fail or be skipped, and the run's verdict must match.

usage: cpython_regrtest.py RETICLE WORKDIR PYTHON MODULE..."""
import os, re, shutil, subprocess, sys

RESULT = re.compile(r"\b(test_\w+) (passed|failed|skipped|resource denied|"
                    r"crashed|timed out|interrupted)")
VERDICT = re.compile(r"^Tests result: (\w+)", re.M)


def outcome(text):
    """Per-module outcomes and the run's verdict, from regrtest's output."""
    mods = {}
    for mod, what in RESULT.findall(text):
        mods[mod] = what
    m = VERDICT.search(text)
    return mods, m.group(1) if m else None


def regrtest(cmd, env, modules):
    # -j2: each module in a worker process (the workers are traced too);
    # --timeout: a hung module ends the worker rather than the test
    r = subprocess.run(cmd + ["-m", "test", "-j2", "--timeout", "600"] + modules,
                       capture_output=True, env=env, timeout=1800)
    return r.returncode, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


reticle, work, python = sys.argv[1:4]
MODULES = sys.argv[4:]
if not os.path.exists(os.path.join("/usr/lib/python3.11/test", "regrtest.py")):
    print("SKIP: libpython3.11-testsuite is not installed")
    sys.exit(77)
os.makedirs(work, exist_ok=True)
env = dict(os.environ, PYTHONHASHSEED="0")
code, text = regrtest([python], env, MODULES)
native, verdict = outcome(text)
if len(native) != len(MODULES) or verdict is None:
    print(f"FAIL: the native run reported {len(native)} of {len(MODULES)} modules")
    print(text[-3000:])
    sys.exit(1)
ok = True
for cs in ("fcount", "bbcount", "cover"):
    prof = os.path.join(work, cs)
    shutil.rmtree(prof, ignore_errors=True)
    os.makedirs(prof)
    cenv = dict(env, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    cmd = [reticle, "run", "-c", cs, "-o", os.path.join(prof, "p.db"), "--", python]
    rc, out = regrtest(cmd, cenv, MODULES)
    got, v = outcome(out)
    diff = {m: (native[m], got.get(m)) for m in MODULES if got.get(m) != native.get(m)}
    if diff:
        # timing tests (test_threading, test_signal, test_time...) can fail
        # once on a loaded machine, natively as well as under reticle: a
        # module that differs is run again alone, under reticle and
        # natively, and the two must then agree
        rc2, out2 = regrtest(cmd, cenv, sorted(diff))
        again, _ = outcome(out2)
        _, nout2 = regrtest([python], env, sorted(diff))
        native2, _ = outcome(nout2)
        for m in sorted(diff):
            if again.get(m) in (native[m], native2.get(m)) or got.get(m) == native2.get(m):
                print(f"note [{cs}]: {m} {diff[m][1]} under reticle (native {native[m]}), then "
                      f"{again.get(m)} under reticle and {native2.get(m)} natively")
                got[m] = native[m]
                del diff[m]
        if not diff:
            v, rc = verdict, code
        else:
            out = out2
    if diff or v != verdict or rc != code:
        ok = False
        print(f"FAIL [{cs}]: exit {rc} (native {code}), verdict {v} (native {verdict})")
        for m, (n, g) in sorted(diff.items()):
            print(f"  {m}: native {n}, under reticle {g}")
        print(out[-3000:])
    else:
        print(f"ok [{cs}]: {len(got)} modules as natively ({verdict})")
    shutil.rmtree(prof, ignore_errors=True)
sys.exit(0 if ok else 1)
