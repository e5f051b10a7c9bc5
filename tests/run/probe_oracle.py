#!/usr/bin/env python3
"""reticle probe against the program's own counts, the truth of a spin
program, and an attached process.

usage: probe_oracle.py RETICLE WORKDIR TARGET PHASES LOOP CXX

TARGET (programs/probe_target.c) counts in plain C what each clause of
PROGRAM below counts (calls under a function and after a longjmp out of
it, arguments signed and unsigned, return values, two globals, counts by
value, a histogram of an argument), in two threads and a fork child; it
prints its counts, and those of the child (which start from the parent's)
are the totals of both images: reticle's aggregations must equal them.
Exit status and output must be the program's.

PHASES (programs/probe_phases.c) spins set times in nested functions and
measures each call itself: time() with onstack() predicates (Paradyn's
Figure 1: time in send_msg while foo is on the stack) must find the calls
exactly and the program's own times within 2%; hist(latency) the calls in
the buckets of their set times.

A real program, sqlite3 (when it and valgrind are here): entry counts of
every sqlite3* function of libsqlite3 and of libc's malloc and free, per
function, against callgrind's calls to them. callgrind counts a function's
jump to its own entry (a self tail call, a loop in reticle's copy) as a
call, so a function may differ by a little; malloc and free must be
exact, and 99% of the functions.

LOOP (programs/probe_loop.c) runs until killed: `reticle probe -p`
attaches, counts with predicates in a fixed ratio to one another, prints
--interval lines, and leaves the process running without reticle's
mappings.

CXX (programs/backtrace_throw.cpp): points and onstack() by demangled
names (middle for _Z6middlei, fail, ends_in_fail), their counts equal to
the mangled name's and to callgrind's calls.

And bad programs: a one-line message naming line and column, exit 2."""
import os, re, shutil, signal, subprocess, sys, time
from callgraph_oracle import parse_arcs

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


PROGRAM = r"""
# the counts probe_target.c prints
entry:send_msg { @send = count(); @hist = hist(arg0); }
entry:send_msg /onstack(foo)/ { @send_in_foo = count(); }
entry:send_msg /!onstack(foo)/ { @send_not_foo = count(); }
entry:bar /arg0 > 1000/ { @bar_big = count(); }
entry:bar /arg0 < 0/ { @bar_neg = count(); }
entry:bar /(uint64)arg1 > 0xffffffff00000000/ { @big_unsigned = count(); }
entry:send_msg /mode == 2/ { @mode2 = count(); }
entry:send_msg /flag/ { @flag = count(); }
exit:pick /retval == 0/ { @pick0 = count(); }
exit:pick { @pick_ret[retval] = count(); }
entry:pick { @key[(int8)arg0] = count(); }
# alternatives: counts the program's add up to
entry:bar /arg0 > 1000 || arg0 < 0/ { @bar_out = count(); }
entry:send_msg /onstack(foo) || !onstack(foo) && flag == 0 || !onstack(foo) && flag/ { @send_any = count(); }
entry:send_msg /flag && !onstack(foo) || mode == 2 && onstack(foo)/ { @send_mixed = count(); }
"""


def aggregations(text):
    """{'@name': value or {key: value}} and histograms {'@name': {bucket: count}}."""
    out, hist = {}, None
    for line in text.splitlines():
        m = re.match(r"^@(\w+)\[(-?\w+)\]: (\d+)$", line)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = int(m.group(3))
            hist = None
            continue
        m = re.match(r"^@(\w+): (\d+)$", line)
        if m:
            out[m.group(1)] = int(m.group(2))
            hist = None
            continue
        m = re.match(r"^@(\w+):$", line)
        if m:
            hist = out.setdefault(m.group(1), {})
            continue
        m = re.match(r"^(\[[^\]]*[\])]|\(\.\.\., 0\))\s+(\d+) \|", line)
        if m and hist is not None:
            hist[m.group(1)] = int(m.group(2))
            continue
        m = re.match(r"^@(\w+): calls (\d+), inclusive ([\d.]+) s, exclusive ([\d.]+) s", line)
        if m:
            out[m.group(1)] = (int(m.group(2)), float(m.group(3)), float(m.group(4)))
    return out


def bucket_name(b):
    if b < 0:
        return "(..., 0)"
    if b <= 1:
        return "[%d]" % b
    return "[%d, %d)" % (1 << (b - 1), 1 << b)


def check_target(reticle, work, target, env):
    native = subprocess.run([target, "3000"], capture_output=True, text=True, timeout=120)
    r = subprocess.run([reticle, "probe", "-r", os.path.join(work, "agg.txt"), PROGRAM, "--", target, "3000"],
                       capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != native.returncode:
        fail(f"target: exit status {r.returncode}, natively {native.returncode}: {r.stderr[-2000:]}")
    if r.stdout != native.stdout:
        fail("target: output differs from the native run's")
    truth = {}
    for line in r.stdout.splitlines():
        who, name, value = line.split()
        if who == "child":
            truth[name] = int(value)
    got = aggregations(open(os.path.join(work, "agg.txt")).read())
    for name in ("send", "send_in_foo", "send_not_foo", "bar_big", "bar_neg", "big_unsigned", "mode2", "flag",
                 "pick0", "send_mixed"):
        if got.get(name) != truth.get(name):
            fail(f"@{name}: {got.get(name)}, the program counted {truth.get(name)}")
    for name, want in (("bar_out", truth.get("bar_big", 0) + truth.get("bar_neg", 0)),
                       ("send_any", truth.get("send"))):
        if got.get(name) != want:
            fail(f"@{name}: {got.get(name)}, the program's counts make {want}")
    want = {k[len("pick_ret["):-1]: v for k, v in truth.items() if k.startswith("pick_ret[")}
    if got.get("pick_ret") != want:
        fail(f"@pick_ret: {got.get('pick_ret')}, the program counted {want}")
    want = {k[len("key["):-1]: v for k, v in truth.items() if k.startswith("key[")}
    if got.get("key") != want:
        fail(f"@key: {len(got.get('key') or {})} values, the program counted {len(want)}; "
             f"first differences: {[(k, got.get('key', {}).get(k), v) for k, v in want.items() if got.get('key', {}).get(k) != v][:5]}")
    want = {bucket_name(int(k[len("hist["):-1])): v for k, v in truth.items() if k.startswith("hist[")}
    if got.get("hist") != want:
        fail(f"@hist: {got.get('hist')}, the program counted {want}")
    print(f"target: {len(got)} aggregations, @send {got.get('send')}, @send_in_foo {got.get('send_in_foo')}, "
          f"{len(got.get('key') or {})} keys")


PHASES = r"""
entry:send_msg /onstack(foo)/ { @in_foo = time(); @lat_foo = hist(latency); }
entry:send_msg /!onstack(foo)/ { @not_foo = time(); }
entry:foo,entry:bar { @foo_bar = time(); }
entry:foo { @foo = time(); @foo_calls = count(); }
"""


def check_phases(reticle, work, phases, env):
    r = subprocess.run([reticle, "probe", PHASES, "--", phases], capture_output=True, text=True, env=env,
                       timeout=120)
    if r.returncode:
        fail(f"phases: exit {r.returncode}: {r.stderr[-2000:]}")
        return
    got = aggregations(r.stdout)
    truth = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("@"):
            truth[parts[0]] = (int(parts[1]), float(parts[2]))
    # foo (5 in main, 5 in a thread) spins 10 and 5 ms in send_msg; bar
    # (5) spins 20 ms in it: as the program measured them
    want = dict(truth)
    if "foo" in truth and "not_foo" in truth:
        want["foo_bar"] = (truth["foo"][0] + truth["not_foo"][0], truth["foo"][1] + truth["not_foo"][1])
    for name in ("in_foo", "not_foo", "foo_bar", "foo"):
        v, (calls, secs) = got.get(name), want.get(name, (None, 0))
        if not isinstance(v, tuple) or v[0] != calls or abs(v[1] - secs) > 0.02 * secs:
            fail(f"phases @{name}: {v}, the program measured {calls} calls and {secs} s (2%)")
    foo = got.get("foo")
    if isinstance(foo, tuple) and foo[2] > 0.01:
        fail(f"phases @foo: exclusive {foo[2]} s, but its time is send_msg's, which is timed")
    if got.get("foo_calls") != 10:
        fail(f"phases @foo_calls: {got.get('foo_calls')}, want 10")
    lat = got.get("lat_foo") or {}
    if sum(lat.values()) != 20 or len(lat) > 3:
        fail(f"phases @lat_foo: {lat}, want 20 calls in the buckets of 5 and 10 ms")
    print(f"phases: {got}")


SQL = ("create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c where x<2000) "
       "insert into t select x, x*x from c; select count(*), sum(b) from t where a % 3 = 1;")


def check_real(reticle, work, env):
    sqlite3, valgrind = shutil.which("sqlite3"), shutil.which("valgrind")
    if not sqlite3 or not valgrind:
        print("NOTE: sqlite3 or valgrind missing: the real program's part is skipped")
        return
    out = os.path.join(work, "callgrind.out")
    cg = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=" + out, "--dump-instr=yes",
                         "--skip-plt=no", sqlite3, ":memory:", SQL], capture_output=True, text=True, timeout=300)
    agg = os.path.join(work, "sqlite.txt")
    r = subprocess.run([reticle, "probe", "-r", agg,
                        "entry:libsqlite3*:sqlite3* { @c[func] = count(); }\n"
                        "entry:libc.so*:malloc, entry:libc.so*:free { @c[func] = count(); }",
                        "--", sqlite3, ":memory:", SQL], capture_output=True, text=True, env=env, timeout=120)
    if r.returncode or r.stdout != cg.stdout:
        fail(f"sqlite3: exit {r.returncode}, output {r.stdout!r} (callgrind's run printed {cg.stdout!r}): "
             f"{r.stderr[-2000:]}")
        return
    want = {}
    for (ob, site), callees in parse_arcs(out).items():
        for (cob, caddr, cname), n in callees.items():
            if cname and ((cname.startswith("sqlite3") and "libsqlite3" in (cob or "")) or
                          (cname in ("malloc", "free") and "libc.so" in (cob or ""))):
                want[cname] = want.get(cname, 0) + n
    got = aggregations(open(agg).read()).get("c") or {}
    differ = [(f, got.get(f), n) for f, n in sorted(want.items()) if got.get(f) != n]
    extra = [f for f in got if f not in want]
    far = [d for d in differ if d[1] is None or abs(d[1] - d[2]) > max(2, d[2] // 100) or d[0] in ("malloc", "free")]
    if len(want) < 100 or far or extra or len(differ) > len(want) // 100:
        fail(f"sqlite3: {len(want) - len(differ)} of {len(want)} functions as callgrind counts them; "
             f"far off: {far[:10]}; only reticle's: {extra[:10]}; all differences: {differ[:10]}")
    print(f"sqlite3: {len(want) - len(differ)} of {len(want)} functions' calls as callgrind's; "
          f"differences {differ[:5]}; malloc {got.get('malloc')}, free {got.get('free')}")


def check_cxx(reticle, work, cxx, env):
    valgrind = shutil.which("valgrind")
    if not valgrind:
        print("NOTE: valgrind missing: the C++ names' part is skipped")
        return
    out = os.path.join(work, "callgrind_cxx.out")
    cg = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=" + out, cxx],
                        capture_output=True, text=True, timeout=300)
    want = {}
    for (ob, site), callees in parse_arcs(out).items():
        for (cob, caddr, cname), n in callees.items():
            want[cname] = want.get(cname, 0) + n
    agg = os.path.join(work, "cxx.txt")
    r = subprocess.run([reticle, "probe", "-r", agg,
                        "entry:middle { @middle = count(); }\n"
                        "entry:_Z6middlei { @mangled = count(); }\n"
                        "entry:fail /onstack(ends_in_fail)/ { @fail = count(); }",
                        "--", cxx], capture_output=True, text=True, env=env, timeout=120)
    got = aggregations(open(agg).read()) if os.path.exists(agg) else {}
    calls = (want.get("middle(int)") or want.get("_Z6middlei"), want.get("fail(int)") or want.get("_Z4faili"))
    if r.returncode != cg.returncode or r.stdout != cg.stdout or not calls[0] or \
            (got.get("middle"), got.get("fail")) != calls or got.get("mangled") != calls[0]:
        fail(f"C++ names: exit {r.returncode}, middle {got.get('middle')} (by its mangled name "
             f"{got.get('mangled')}), fail under ends_in_fail {got.get('fail')}; callgrind's calls "
             f"{calls}: {r.stderr[-1500:]}")
    print(f"C++ names: middle {got.get('middle')}, fail under ends_in_fail {got.get('fail')}, "
          f"callgrind {calls}")


def maps_reticle(pid):
    with open(f"/proc/{pid}/maps") as f:
        return [l for l in f if "reticle" in l or "memfd:" in l]


def check_attach(reticle, work, loop, env):
    p = subprocess.Popen([loop], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        text = ("entry:work /onstack(outer) && arg0 == 3/ { @w3 = count(); }\n"
                "entry:outer { @o = count(); }\n"
                "entry:outer /level == 2/ { @o2 = count(); }\n")
        r = subprocess.run([reticle, "probe", "-i", "0.3", text, "-p", str(p.pid), "-d", "1"],
                           capture_output=True, text=True, env=env, timeout=60)
        if r.returncode:
            fail(f"attach: exit {r.returncode}: {r.stderr[-2000:]}")
            return
        final = r.stdout.split("--- end\n")[-1]
        got = aggregations(final)
        o, o2, w3 = got.get("o", 0), got.get("o2", 0), got.get("w3", 0)
        # probe_loop.c: level = n % 4 before outer(n % 10), which calls
        # work(k) and work(k + 1): arg 3 in 2 of 10 rounds
        if o < 1000 or abs(o2 - o / 4) > 2 or abs(w3 - o / 5) > 3:
            fail(f"attach: @o {o}, @o2 {o2} (want a quarter), @w3 {w3} (want a fifth)")
        if r.stdout.count("--- ") < 2 or "--- end" not in r.stdout:   # a loaded machine may print fewer
            fail(f"attach: --interval printed {r.stdout.count('--- ') - 1} times in 1 s at 0.3 s")
        if p.poll() is not None:
            fail(f"attach: the process ended ({p.returncode})")
        elif maps_reticle(p.pid):
            fail(f"attach: mappings left: {maps_reticle(p.pid)}")
        print(f"attach: @o {o} @o2 {o2} @w3 {w3}")
    finally:
        p.kill()
        p.wait()


BAD = [
    ("entry:main { @a = count() ", "line 1, column 27"),
    ("entry:main /arg9 == 1/ { @a = count(); }", "arg9"),
    ("entry main { @a = count(); }", "line 1, column 7"),
    ("exit:main { @a = time(); }", "entry:"),
    ("entry:main /retval == 0/ { @a = count(); }", "retval"),
    ("entry:main {\n @a = count();\n @a = time(); }", "line 3"),
    ("", "no clause"),
]


def check_bad(reticle, target, env):
    for text, want in BAD:
        r = subprocess.run([reticle, "probe", text, "--", target], capture_output=True, text=True, env=env,
                           timeout=60)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or want not in lines[0] or r.stdout:
            fail(f"bad program {text!r}: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout[:200]!r}")
    r = subprocess.run([reticle, "probe", "entry:main { @a = count(); }", "--", "/nonexistent/prog"],
                       capture_output=True, text=True, env=env, timeout=60)
    if r.returncode != 127:
        fail(f"a program that does not exist: exit {r.returncode}, {r.stderr!r}")
    # a function no module has: refused before the program runs; one of
    # a module not loaded at the start: run, and said at the end
    for text in ("entry:nosuchfunction { @a = count(); }", "entry:libc.so*:nosuchfunction { @a = count(); }",
                 "entry:main /onstack(nosuchfunction)/ { @a = count(); }"):
        r = subprocess.run([reticle, "probe", text, "--", target, "10"], capture_output=True, text=True, env=env,
                           timeout=60)
        if r.returncode != 2 or "nosuchfunction" not in r.stderr or r.stdout:
            fail(f"{text}: exit {r.returncode}, {r.stderr!r}, output {r.stdout[:100]!r}")
    r = subprocess.run([reticle, "probe", "entry:notloaded.so:f { @a = count(); }", "--", target, "10"],
                       capture_output=True, text=True, env=env, timeout=60)
    if "matched no function" not in r.stderr or r.returncode != 7:
        fail(f"a point of a module never loaded: exit {r.returncode}, {r.stderr!r}")


def main():
    reticle, work, target, phases, loop, cxx = sys.argv[1:7]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    check_target(reticle, work, target, env)
    check_phases(reticle, work, phases, env)
    check_real(reticle, work, env)
    check_cxx(reticle, work, cxx, env)
    check_attach(reticle, work, loop, env)
    check_bad(reticle, target, env)
    print("probe: %d failures" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
