#!/usr/bin/env python3
"""Compares reticle's fcount/bbcount numbers with valgrind callgrind's for the
same program run: calls and instructions (Ir) per function of the main
executable, and executions per instruction address.

usage: callgrind_oracle.py RETICLE WORKDIR [--only NAME,NAME...] -- PROGRAM ARGS...
--only limits the comparison to the program's own functions: in a static
executable libc runs different code under valgrind's virtual CPU (other
ifunc choices, cpuid-driven paths), so its counts are not comparable.
Exits 0 when every function of the main executable that callgrind saw has
exactly the same calls and Ir under reticle, in a cold run (empty warm-start
cache) and in the warm run after it; the copies placed in both (made ahead,
or saved) are checked against fresh ones (verify_copies.py)."""
import bisect, json, os, re, shutil, subprocess, sys
import verify_copies


def decode_position(parts, last):
    """A callgrind position list: each number absolute, +N/-N relative to
    LAST's, or * for LAST's."""
    pos = []
    for i, p in enumerate(parts):
        if p.startswith("+"):
            pos.append(last[i] + int(p[1:], 0))
        elif p.startswith("-"):
            pos.append(last[i] - int(p[1:], 0))
        elif p == "*":
            pos.append(last[i])
        else:
            pos.append(int(p, 0))
    return pos


def parse_callgrind(path):
    """Returns {(object, function): {"ir": n, "calls": n, "instr": {addr: ir}}}."""
    names = {"ob": {}, "fl": {}, "fn": {}}
    cur = {"ob": None, "fn": None, "cob": None, "cfn": None}
    out = {}
    positions = ["line"]
    events = []
    last = [0, 0]
    skip_next_cost = False
    pending_calls = None

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", text)
        if not m:
            return text
        key = kind if kind in names else kind[1:]
        if m.group(2) is not None:
            names[key][m.group(1)] = m.group(2)
        return names[key].get(m.group(1), text)

    def entry(ob, fn):
        return out.setdefault((ob, fn), {"ir": 0, "calls": 0, "instr": {}})

    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("positions:"):
                positions = line.split()[1:]
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                continue
            m = re.match(r"^(ob|fl|fi|fe|fn|cob|cfi|cfl|cfn)=(.*)$", line)
            if m:
                kind, val = m.group(1), m.group(2)
                if kind in ("fi", "fe", "fl", "cfi", "cfl"):
                    name("fl", val)
                    continue
                key = {"ob": "ob", "fn": "fn", "cob": "ob", "cfn": "fn"}[kind]
                v = name(key, val)
                cur[kind] = v
                if kind == "fn":
                    cur["cob"] = None
                continue
            m = re.match(r"^calls=(\d+)\s", line)
            if m:
                callee = (cur["cob"] or cur["ob"], cur["cfn"])
                entry(*callee)["calls"] += int(m.group(1))
                cur["cob"] = None
                skip_next_cost = True
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            parts = line.split()
            npos = len(positions)
            pos = decode_position(parts[:npos], last)
            for i, v in enumerate(pos):
                last[i] = v
            if skip_next_cost:
                skip_next_cost = False
                continue
            costs = [int(c) for c in parts[npos:]]
            ir = costs[events.index("Ir")] if "Ir" in events and len(costs) > events.index("Ir") else 0
            e = entry(cur["ob"], cur["fn"])
            e["ir"] += ir
            if positions[0] == "instr":
                e["instr"][pos[0]] = e["instr"].get(pos[0], 0) + ir
    return out


def function_ranges(exe):
    """[(start, end, name)] of the executable's function symbols, from nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", exe], capture_output=True, text=True).stdout
    ranges = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwWiI" and int(parts[1], 16) > 0:
            start = int(parts[0], 16)
            ranges.append((start, start + int(parts[1], 16), parts[3]))
    return sorted(ranges)


def aliases(ranges):
    """{name: the group's name} for symbols that share a start address
    (C++'s complete and base destructors, D1Ev and D2Ev): one function,
    which callgrind and reticle may each name by another of them."""
    by_start = {}
    for start, _, name in ranges:
        by_start.setdefault(start, []).append(name)
    return {n: min(names) for names in by_start.values() for n in names}


def load_bias(main_addrs, main_start):
    """The executable's load bias from the run-time addresses callgrind
    charges to main: the one of them that is main's entry lies a whole
    number of pages from main's link-time address (g++ -O2 puts main.cold,
    whose code callgrind charges to main, before main)."""
    aligned = sorted(a - main_start for a in main_addrs if (a - main_start) % 4096 == 0)
    return aligned[0] if aligned else min(main_addrs) - main_start


def callgrind_counts(cg_out, exe, only):
    """{function: {"ir": n, "calls": n}} of the main executable. Ir is summed
    per instruction address over the function symbol holding it: callgrind
    charges code to the function it was entered in, so a .cold part that
    jumps back into its parent's hot code would get the parent's Ir."""
    theirs, instr = {}, {}
    counts = parse_callgrind(cg_out)
    ranges = function_ranges(exe)
    group = aliases(ranges)
    for (ob, fn), v in counts.items():
        if not ob or os.path.realpath(ob) != exe:
            continue
        for addr, ir in v["instr"].items():
            instr[addr] = instr.get(addr, 0) + ir
        if fn.startswith("0x"):
            continue    # callgrind names code without a symbol it reads by address
        fn = re.sub(r"'\d+$", "", fn)          # recursion levels: fib'2 is fib
        fn = {"(below main)": "_start"}.get(fn, fn)
        if only is not None and fn not in only:
            continue
        fn = group.get(fn, fn)
        theirs.setdefault(fn, {"ir": 0, "calls": 0})["calls"] += v["calls"]
    starts = [r[0] for r in ranges]
    # callgrind's addresses are run-time ones: main's entry gives the bias
    main_start = next(r[0] for r in ranges if r[2] == "main")
    main_instr = [a for (ob, fn), v in counts.items() if fn == "main" and ob and
                  os.path.realpath(ob) == exe for a in v["instr"]]
    bias = load_bias(main_instr, main_start)
    for addr, ir in instr.items():
        i = bisect.bisect_right(starts, addr - bias) - 1
        if i < 0 or addr - bias >= ranges[i][1]:
            continue
        fn = ranges[i][2]
        if only is not None and fn not in only:
            continue
        fn = group.get(fn, fn)
        theirs.setdefault(fn, {"ir": 0, "calls": 0})["ir"] += ir
    return theirs


def compare(reticle, db, exe, theirs, tag):
    """Prints one line per function; returns how many were compared and
    whether all of them agree."""
    rep = json.loads(subprocess.run([reticle, "report", "--format", "json", "--all", db],
                                    capture_output=True, check=True).stdout)
    group = aliases(function_ranges(exe))
    mine = {group.get(f["name"], f["name"]): f for f in rep["functions"]
            if os.path.realpath(f["module"]) == exe}
    compared, ok = 0, True
    for fn, v in sorted(theirs.items()):
        if v["ir"] == 0 and v["calls"] == 0:
            continue
        r = mine.get(fn)
        if r is None:
            print(f"FAIL [{tag}]: {fn}: callgrind Ir={v['ir']} calls={v['calls']}, reticle has no row")
            ok = False
            continue
        compared += 1
        line = f"{fn}: Ir callgrind={v['ir']} reticle={r.get('instrs')}  calls callgrind={v['calls']} reticle={r.get('calls')}"
        if r.get("instrs") != v["ir"] or r.get("calls") != v["calls"]:
            print(f"FAIL [{tag}]: " + line)
            ok = False
        else:
            print(f"ok   [{tag}]: " + line)
    return compared, ok


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    only = None
    if "--only" in sys.argv[:sys.argv.index("--")]:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    os.makedirs(work, exist_ok=True)
    prog = sys.argv[sys.argv.index("--") + 1:]
    exe = os.path.realpath(prog[0])
    cg_out = os.path.join(work, "callgrind.out")
    native = subprocess.run(prog, capture_output=True)
    # --skip-plt=no: callgrind would otherwise charge PLT stubs to callers;
    # --demangle=no: C++ names as the symbol table and reticle's rows have them
    cg = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--skip-plt=no",
                         "--demangle=no", "--callgrind-out-file=" + cg_out] + prog, capture_output=True)
    ok = True
    if cg.stdout != native.stdout:
        print("FAIL: callgrind run printed something else")
        ok = False
    theirs = callgrind_counts(cg_out, exe, only)
    # twice: with an empty warm-start cache, then with what the first run left
    cache = os.path.join(work, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    for tag in ("cold", "warm"):
        env = dict(os.environ, RETICLE_CACHE_DIR=cache, **verify_copies.ENV)
        db = os.path.join(work, f"oracle-{tag}.db")
        rt = subprocess.run([reticle, "run", "--stats", "-c", "fcount,bbcount", "-o", db, "--"] + prog,
                            capture_output=True, env=env)
        why = verify_copies.problem(rt.stderr.decode(errors="replace"), tag == "warm")
        if why:
            print(f"FAIL [{tag}]: {why}")
            ok = False
        if rt.stdout != native.stdout or rt.returncode != native.returncode:
            print(f"FAIL [{tag}]: output or exit status differs from the native run",
                  rt.returncode, native.returncode)
            ok = False
        compared, same = compare(reticle, db, exe, theirs, tag)
        stats = [l for l in rt.stderr.decode(errors="replace").splitlines() if "traps" in l]
        print(f"{compared} functions compared [{tag}]; {stats[-1] if stats else ''}")
        ok = ok and same and compared > 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
