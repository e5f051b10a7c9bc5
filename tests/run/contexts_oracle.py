#!/usr/bin/env python3
"""Checks calltime's calling-context tree and its exporters.

usage: contexts_oracle.py RETICLE WORKDIR MODE -- PROGRAM ARGS...

MODE "counts": the calls of every call path among the program's own
functions (the frames after the last one of another module or of crt)
equal callgrind's, run with --separate-callers=200 --separate-recs=200 (its
function names spell the path, callee first), both sides added up over
threads. callgrind counts a tail call (a jump to a function's start) as a
call from the function that jumped, whose frame is gone: reticle's paths
follow the stack, so the fixtures are built with -fno-optimize-sibling-calls.

MODE "times" (programs/phases.c): the program's phases are spins and
sleeps of set lengths, and it prints what it measured of each function
("time FUNCTION TID CALLS INCLUSIVE EXCLUSIVE"): a function met on one path
only has that path's times within 2% (or 2 ms) of the program's; each
level of ph_rec (10 ms spins) and of ph_even/ph_odd (5 ms) has the own time
the program measured of it ("level"; a loaded machine stretches spins) as
exclusive time, and the sum of the levels below as inclusive time. In both modes: per function and thread, the
contexts add up to function_times exactly (calls, exclusive time, and the
inclusive time of the paths where the function is not its own caller);
`report --format folded` has one line per path that took time, the sums of
the tree; `--format svg` has a frame per path prefix as wide as the
folded stacks under it, within its caller's; `--format chrome` is valid trace-event JSON whose events nest;
`--format pprof` read by `go tool pprof -raw` gives every path's calls and
time (skipped without go). Exits 0 when all agree."""
import json, os, re, shutil, sqlite3, subprocess, sys
from collections import defaultdict

fails = 0


def fail(msg):
    global fails
    fails += 1
    if fails <= 30:
        print("FAIL " + msg)


def close(got, want, rel=0.02, ab=0.002):
    return abs(got - want) <= max(rel * abs(want), ab)


def load(db):
    con = sqlite3.connect(db)
    names = {i: n for i, n in con.execute("SELECT id, name FROM functions")}
    ctx = {}
    for cid, parent, fn, tid, calls, inc, exc in con.execute(
            "SELECT id, parent, function, tid, calls, inclusive, exclusive FROM contexts ORDER BY id"):
        ctx[cid] = dict(parent=parent, fn=fn, tid=tid, calls=calls, inc=inc, exc=exc)
    times = {(fn, tid): (c, i, e) for fn, tid, c, i, e in con.execute(
        "SELECT function, tid, calls, inclusive, exclusive FROM function_times")}
    return names, ctx, times


def path_of(ctx, names, cid):
    p = []
    while cid in ctx:
        p.append(names[ctx[cid]["fn"]])
        cid = ctx[cid]["parent"]
    return tuple(reversed(p))


def check_sums(names, ctx, times):
    """Contexts against function_times: the same timers seen two ways."""
    agg = defaultdict(lambda: [0, 0.0, 0.0])
    for cid, c in ctx.items():
        a = agg[(c["fn"], c["tid"])]
        a[0] += c["calls"]
        a[2] += c["exc"]
        up, outer = c["parent"], True
        while up in ctx:
            if ctx[up]["fn"] == c["fn"]:
                outer = False
                break
            up = ctx[up]["parent"]
        if outer:
            a[1] += c["inc"]
    for key, (calls, inc, exc) in times.items():
        got = agg.get(key, [0, 0.0, 0.0])
        name = names[key[0]]
        if got[0] != calls:
            fail(f"{name} thread {key[1]}: contexts have {got[0]} calls, function_times {calls}")
        for what, g, w in (("inclusive", got[1], inc), ("exclusive", got[2], exc)):
            if not close(g, w, 1e-6, 1e-6):
                fail(f"{name} thread {key[1]}: contexts' {what} {g:.9f}, function_times {w:.9f}")
    for key in agg:
        if key not in times and agg[key][0]:
            fail(f"{names[key[0]]}: contexts without function_times")


# crt's code in every program: _start is nobody's callee, frame_dummy
# tail-jumps (the fixtures are built without sibling calls, crt is not)
CRT = {"_start", "_init", "_fini", "frame_dummy", "register_tm_clones", "deregister_tm_clones",
       "__do_global_dtors_aux", "_dl_relocate_static_pie"}


def own_functions(binary):
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True).stdout
    return {w[2] for w in (l.split() for l in out.splitlines())
            if len(w) == 3 and w[1] in "tT" and w[2] not in CRT}


COLD = re.compile(r"\.cold(\.\d+)?$")


def own_suffix(path, own):
    """The frames of PATH after its last one not in OWN (None when there is
    no such frame: a thread's first function is nobody's callee)."""
    for i in range(len(path) - 1, -1, -1):
        if path[i] not in own:
            return path[i + 1:] or None
    return None


DEPTH = 200   # --separate-callers and --separate-recs


def callgrind_path(path):
    """callgrind's context of a call path (outermost first): a function
    calling itself makes no new entry, so runs of one name count once, and
    it keeps the callee and DEPTH callers."""
    out = []
    for f in path:
        if not out or out[-1] != f:
            out.append(f)
    return tuple(out[-DEPTH - 1:])


def check_counts(names, ctx, prog, work, own):
    ours = defaultdict(int)
    for cid, c in ctx.items():
        full = path_of(ctx, names, cid)
        p = own_suffix(callgrind_path(full), own)
        if p:
            ours[(p, min(full.count(full[-1]), DEPTH))] += c["calls"]
    out = os.path.join(work, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-callers=200", "--separate-recs=200",
                    "--callgrind-out-file=" + out]
                   + prog, capture_output=True, timeout=600)
    theirs, names_cg, cfn = defaultdict(int), {}, None
    for line in open(out, errors="replace"):
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
        if m:
            if m.group(3) is not None:
                names_cg[m.group(2)] = m.group(3)
            if m.group(1) == "cfn":
                cfn = names_cg[m.group(2)]
            continue
        if line.startswith("calls=") and cfn:
            # "callee'LEVEL'caller'...": the level only after the callee, when above 1
            parts = cfn.split("'")
            level = 1
            if len(parts) > 1 and parts[1].isdigit():
                level = int(parts.pop(1))
            # a compiler's cold part is its function's (callgrind sees the
            # jump into it as a call; reticle keeps the function's frame)
            if not COLD.search(parts[0]):
                path = tuple(f for f in reversed(parts) if not COLD.search(f))
                p = own_suffix(path, own)
                if p:
                    theirs[(p, level)] += int(line.split()[0][6:])
            cfn = None
    checked = 0
    for k in sorted(set(ours) | set(theirs)):
        if ours.get(k, 0) != theirs.get(k, 0):
            fail(f"{';'.join(k[0])} (level {k[1]}): {ours.get(k, 0)} calls, callgrind {theirs.get(k, 0)}")
        checked += 1
    print(f"{checked} call paths of the program's own functions compared with callgrind")
    if checked < 3:
        fail("too few paths to compare")


def check_times(names, ctx, stdout):
    by_name = defaultdict(list)
    for cid, c in ctx.items():
        by_name[(names[c["fn"]], c["tid"])].append(cid)
    checked = 0
    for line in stdout.splitlines():
        w = line.split()
        if not w or w[0] != "time":
            continue
        key = (w[1], int(w[2]))
        ids = by_name.get(key, [])
        if len(ids) != 1:
            continue
        c = ctx[ids[0]]
        for what, got, want in (("inclusive", c["inc"], w[4]), ("exclusive", c["exc"], w[5])):
            sampled = w[6:7] == ["sampled"]   # estimated from some calls: a preemption escapes it
            if want != "-" and not close(got, float(want), 0.10 if sampled else 0.02, 0.005 if sampled else 0.002):
                fail(f"{w[1]}: its one path's {what} {got:.6f} s, measured {float(want):.6f} s")
        checked += 1
    # the recursive levels against each one's measured own time: the
    # outermost call has the largest argument
    own = defaultdict(dict)
    for line in stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[0] == "level":
            own[w[1]][int(w[2])] = float(w[3])
    for fns, chain in ((("ph_rec",), "ph_rec"), (("ph_even", "ph_odd"), "ph_mutual")):
        levels = sorted((len(path_of(ctx, names, cid)), cid) for cid in ctx if names[ctx[cid]["fn"]] in fns)
        top = len(levels) - 1
        if set(own[chain]) != set(range(top + 1)):
            fail(f"{'/'.join(fns)}: {len(levels)} levels timed, the program measured {sorted(own[chain])}")
            continue
        for i, (depth, cid) in enumerate(levels):
            c, n = ctx[cid], top - i
            if c["calls"] != 1:
                fail(f"{names[c['fn']]} at depth {depth}: {c['calls']} calls, want 1")
            if not close(c["exc"], own[chain][n]):
                fail(f"{names[c['fn']]}({n}) at depth {depth}: exclusive {c['exc']:.6f}, "
                     f"measured {own[chain][n]:.6f}")
            inc = sum(own[chain][m] for m in range(n + 1))
            if not close(c["inc"], inc):
                fail(f"{names[c['fn']]}({n}) at depth {depth}: inclusive {c['inc']:.6f}, "
                     f"measured {inc:.6f} ({n + 1} levels)")
            checked += 1
    print(f"{checked} paths' times compared with the program's")
    if checked < 10:
        fail("too few timed paths")


def export(reticle, db, work, fmt, name, demangle=False):
    """`reticle report -f FMT -o WORK/NAME DB`: the file's path, or None
    after a failure."""
    out = os.path.join(work, name)
    r = subprocess.run([reticle, "report"] + ([] if demangle else ["--no-demangle"]) + ["-f", fmt, "-o", out, db],
                       capture_output=True, text=True)
    if r.returncode:
        fail(f"{fmt}: status {r.returncode}: {r.stderr}")
        return None
    return out


def check_exports(reticle, db, work, names, ctx):
    merged = defaultdict(lambda: [0, 0.0])
    for cid, c in ctx.items():
        m = merged[";".join(n.replace(";", ":") for n in path_of(ctx, names, cid))]
        m[0] += c["calls"]
        m[1] += c["exc"]
    r = subprocess.run([reticle, "report", "--no-demangle", "-f", "folded", db], capture_output=True, text=True)
    if r.returncode:
        fail(f"folded: status {r.returncode}: {r.stderr}")
    lines = {}
    for line in r.stdout.splitlines():
        stack, _, ns = line.rpartition(" ")
        # two functions of one name (in two modules) make one stack twice:
        # flame graphs add them up, as here
        lines[stack] = lines.get(stack, 0) + int(ns)
    for stack, (calls, exc) in merged.items():
        want = round(exc * 1e9)
        if want > 0 and abs(lines.get(stack, 0) - want) > 2:
            fail(f"folded: {stack}: {lines.get(stack)} ns, contexts {want}")
    extra = [s for s in lines if merged.get(s, (0, 0))[1] <= 0]
    if extra:
        fail(f"folded: {len(extra)} stacks that took no time, e.g. {extra[0]}")
    check_svg(reticle, db, work, lines)
    check_callgrind(reticle, db, work, names, ctx)
    chrome = export(reticle, db, work, "chrome", "trace.json", demangle=True)
    try:
        if chrome:
            check_chrome(json.load(open(chrome)), len(ctx))
    except (OSError, ValueError) as e:
        fail(f"chrome: {e}")
    if not shutil.which("go"):
        print("no go: pprof not checked")
        return
    pb = export(reticle, db, work, "pprof", "profile.pb")
    if not pb:
        return
    raw = subprocess.run(["go", "tool", "pprof", "-raw", pb], capture_output=True, text=True,
                         env=dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache")))
    if raw.returncode:
        fail(f"pprof: go tool pprof -raw: {raw.stderr}")
        return
    samples, locs, section = [], {}, None
    for line in raw.stdout.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:" and ":" in line and line.strip()[0].isdigit():
            vals, _, stack = line.partition(":")
            samples.append(([int(v) for v in vals.split()], stack.split()))
        elif section == "Locations":
            m = re.match(r"\s*(\d+): \S+ M=\d+ (.*) \S*:\d+ s=\d+$", line)
            if m:
                locs[m.group(1)] = m.group(2)
    got = defaultdict(lambda: [0, 0])
    for vals, stack in samples:
        key = ";".join(locs.get(l, "?").replace(";", ":") for l in reversed(stack))
        got[key][0] += vals[0]
        got[key][1] += vals[1]
    for stack, (calls, exc) in merged.items():
        g = got.get(stack, [0, 0])
        if g[0] != calls or abs(g[1] - max(round(exc * 1e9), 0)) > 1:
            fail(f"pprof: {stack}: {g}, contexts {calls} calls {round(exc * 1e9)} ns")
    print(f"pprof: {len(samples)} samples")


def check_callgrind(reticle, db, work, names, ctx):
    """The callgrind export's Time event: per function its exclusive ns,
    per caller-callee pair the inclusive ns of the calls= lines equal to
    the contexts' (the tree's arcs); callgrind_annotate reads it."""
    out = export(reticle, db, work, "callgrind", "cg.out")
    if not out:
        return
    want_self, want_arc = defaultdict(int), defaultdict(int)
    for cid, c in ctx.items():
        want_self[names[c["fn"]]] += c["exc"]
        if c["parent"] in ctx:
            want_arc[(names[ctx[c["parent"]]["fn"]], names[c["fn"]])] += c["inc"]
    got_self, got_arc, lines_of = defaultdict(int), defaultdict(int), defaultdict(int)
    cnames, fn, cfn, after_call, col, npos = {}, None, None, False, None, 1
    for line in open(out):
        line = line.rstrip("\n")
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith("events:"):
            ev = line.split()[1:]
            col = ev.index("Time") if "Time" in ev else None
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3) is not None:
                cnames[m.group(2)] = m.group(3)
            if m.group(1) == "fn":
                fn = cnames[m.group(2)]
            else:
                cfn = cnames[m.group(2)]
        elif line.startswith("calls="):
            after_call = True
        elif line[:2] == "0x" and col is not None:
            w = line.split()
            v = int(w[npos + col]) if len(w) > npos + col else 0
            if after_call:
                got_arc[(fn, cfn)] += v
                lines_of[(fn, cfn)] += 1
                after_call = False
            else:
                got_self[fn] += v
                lines_of[fn] += 1
    if col is None:
        fail("callgrind: no Time event")
        return
    # self Time comes from function_times, rounded to whole ns per thread:
    # the same ticks at the same rate as the contexts
    for name, s in want_self.items():
        want = max(round(s * 1e9), 0)
        if abs(got_self.get(name, 0) - want) > 4 + lines_of[name]:
            fail(f"callgrind: self Time of {name}: {got_self.get(name, 0)}, contexts {want}")
    for pair, s in want_arc.items():
        want = max(round(s * 1e9), 0)
        if abs(got_arc.get(pair, 0) - want) > 1 + lines_of[pair] + want * 1e-6:
            fail(f"callgrind: Time of calls {pair[0]} -> {pair[1]}: {got_arc.get(pair, 0)}, contexts {want}")
    extra = [p for p in got_arc if p not in want_arc and got_arc[p]]
    if extra:
        fail(f"callgrind: Time on calls the tree does not have: {extra[:3]}")
    a = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], capture_output=True, text=True)
    if a.returncode or "Time" not in a.stdout:
        fail(f"callgrind_annotate: status {a.returncode}: {a.stderr[:200]}")
    print(f"callgrind: Time of {len(want_self)} functions and {len(want_arc)} caller-callee pairs")


def check_svg(reticle, db, work, folded):
    """The flame graph against the folded stacks: a frame per path prefix
    (depth, name) as wide as the time of the stacks under it, callees
    within their caller."""
    svg = export(reticle, db, work, "svg", "flame.svg")
    if not svg:
        return
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as e:
        fail(f"svg: not XML: {e}")
        return
    ns = "{http://www.w3.org/2000/svg}"
    frames = [(int(g.get("data-d")), g.get("data-n"), float(g.get("data-x")), float(g.get("data-w")))
              for g in root.iter(ns + "g") if g.get("class") == "f"]
    total = sum(folded.values())
    want = defaultdict(int)
    for stack, t in folded.items():
        p = stack.split(";")
        for k in range(len(p)):
            want[(k, ";".join(p[:k + 1]))] += t
    # widths by (depth, name): paths of one depth and name are told apart by width
    exp, got = defaultdict(list), defaultdict(list)
    for (k, path), t in want.items():
        exp[(k, path.rsplit(";", 1)[-1])].append(t / total)
    for d, name, x, w in frames:
        got[(d, name.replace(";", ":"))].append(w)
    for key in set(exp) | set(got):
        # (frames under 0.1 px are left out of the svg: those near it, either way)
        e = sorted(v for v in exp.get(key, []) if v * 1180 >= 0.2)
        g = sorted(v for v in got.get(key, []) if v * 1180 >= 0.2)
        # folded lines are whole ns: up to half a ns off each
        if len(e) != len(g) or any(abs(a - b) > 1e-6 + 1e-4 * a + len(folded) / total for a, b in zip(e, g)):
            fail(f"svg: frames {key}: widths {g[:4]}, folded stacks {e[:4]}")
    # nesting: each frame above depth 0 lies within one frame below it
    by_depth = defaultdict(list)
    for d, name, x, w in frames:
        by_depth[d].append((x, w))
    for d, name, x, w in frames:
        if d and not any(px - 1e-9 <= x and x + w <= px + pw + 1e-9 for px, pw in by_depth[d - 1]):
            fail(f"svg: {name} at depth {d} has no caller frame under it")
            break
    if abs(sum(w for d, _, _, w in frames if d == 0) - 1) > 1e-6:
        fail("svg: the bottom frames do not fill the width")
    print(f"svg: {len(frames)} frames")


def check_chrome(doc, ncontexts):
    ev = doc["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    for e in ev:
        if not isinstance(e.get("name"), str) or e.get("ph") not in ("X", "M") \
                or not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail(f"chrome: bad event {e}")
            return
        if e["ph"] == "X" and not (isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))
                                   and e["dur"] >= 0 and e["ts"] >= 0):
            fail(f"chrome: bad complete event {e}")
            return
    # events of a thread nest: sorted by start (longest first), each one
    # ends within the innermost open one that contains its start
    by_thread = defaultdict(list)
    for e in xs:
        by_thread[(e["pid"], e["tid"])].append(e)
    for key, es in by_thread.items():
        es.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in es:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - 1e-6 and \
                    not (e["ts"] == stack[-1]["ts"] and e["dur"] == 0):
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + 1e-6:
                fail(f"chrome: {e['name']} at {e['ts']} overlaps {stack[-1]['name']}")
                return
            stack.append(e)
    if len(xs) < ncontexts / 2:
        fail(f"chrome: {len(xs)} events for {ncontexts} contexts")
    print(f"chrome: {len(xs)} events in {len(by_thread)} threads")


def main():
    reticle, work, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    prog = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    native = subprocess.run(prog, capture_output=True, text=True, timeout=300)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    for attempt in range(5 if mode == "times" else 1):
        db = os.path.join(work, "p.db")
        r = subprocess.run([reticle, "run", "-c", "calltime", "-o", db, "--"] + prog,
                           capture_output=True, text=True, timeout=600, env=env)
        if r.returncode != native.returncode:
            fail(f"exit status {r.returncode}, natively {native.returncode}: {r.stderr}")
            return 1
        names, ctx, times = load(db)
        print(f"{len(ctx)} contexts")
        global fails
        before = fails
        if mode == "times":
            check_times(names, ctx, r.stdout)
            if fails > before and attempt < 4:
                print(f"times differ (attempt {attempt + 1}); again")
                fails = before
                continue
        break
    check_sums(names, ctx, times)
    if mode == "counts":
        check_counts(names, ctx, prog, work, own_functions(prog[0]))
    check_exports(reticle, db, work, names, ctx)
    print(f"{fails} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
