#!/usr/bin/env python3
"""Compares reticle's callgraph arcs with valgrind callgrind's calls= lines
for the same program run (--dump-instr=yes --skip-plt=no).

usage: callgraph_oracle.py RETICLE WORKDIR [--only NAME,NAME...] -- PROGRAM ARGS...

An arc is (call instruction, callee) with its count. Compared: every arc
callgrind saw whose call instruction or callee is in the main executable
(--only: whose caller or callee is one of the named functions), made by a
call instruction (callgrind also counts some jumps between functions as
calls). A call to a PLT stub (callgrind's callee "[PLT]") must be one arc of
reticle's at the same call instruction with the same count: reticle counts
it for the function the stub leads to, which under valgrind's CPU may be
another ifunc choice. Direct and indirect calls are both compared, in a cold
run and in a warm one. Exits 0 when every arc agrees."""
import os, re, shutil, sqlite3, subprocess, sys
from callgrind_oracle import decode_position


def parse_arcs(path):
    """{(caller object, site): {(callee object, callee addr, callee name): count}}."""
    names = {"ob": {}, "fn": {}}
    cur = {"ob": None, "fn": None, "cob": None, "cfn": None}
    arcs = {}
    positions, last = ["line"], [0, 0]
    pending = None

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", text)
        if not m:
            return text
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), text)

    def position(parts):
        return decode_position(parts[:len(positions)], last)

    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("positions:"):
                positions = line.split()[1:]
                last = [0] * len(positions)
                continue
            m = re.match(r"^(ob|fl|fi|fe|fn|cob|cfi|cfl|cfn)=(.*)$", line)
            if m:
                kind, val = m.group(1), m.group(2)
                if kind in ("ob", "cob"):
                    cur[kind] = name("ob", val)
                elif kind in ("fn", "cfn"):
                    cur[kind] = name("fn", val)
                if kind == "fn":
                    cur["cob"] = None
                continue
            m = re.match(r"^calls=(\d+)\s+(\S+)", line)
            if m:
                target = position(line.split()[1:])[0]
                pending = (int(m.group(1)), cur["cob"] or cur["ob"], target, cur["cfn"])
                cur["cob"] = None
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            pos = position(line.split())
            last[:len(pos)] = pos
            if pending:
                count, cob, target, cfn = pending
                pending = None
                site = arcs.setdefault((os.path.realpath(cur["ob"]), pos[0]), {})
                # a callee's recursion levels (fib'2) are one function
                cfn = re.sub(r"'\d+$", "", cfn or "")
                key = (os.path.realpath(cob) if cob and cob != "???" else cob, target, cfn)
                site[key] = site.get(key, 0) + count
    return arcs


def call_at(obj, addr, cache={}):
    """The call instruction at link-time ADDR of OBJ as objdump prints it,
    or None when it is not a call."""
    if (obj, addr) not in cache:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={addr:#x}",
                              f"--stop-address={addr + 16:#x}", obj], capture_output=True, text=True).stdout
        ins = [l.split("\t", 1)[1].strip() for l in out.splitlines() if re.match(r"^\s+[0-9a-f]+:\t", l)]
        cache[(obj, addr)] = ins[0] if ins and ins[0].startswith("call") else None
    return cache[(obj, addr)]


def reticle_arcs(db):
    """{(module, site): {(callee module, callee addr, callee name): count}}."""
    con = sqlite3.connect(db)
    rows = con.execute("""SELECT m1.path, c.site, m2.path, f2.addr, f2.name, f1.name, c.count
                          FROM call_sites c JOIN functions f1 ON f1.id = c.caller
                          JOIN functions f2 ON f2.id = c.callee
                          JOIN modules m1 ON m1.id = f1.module JOIN modules m2 ON m2.id = f2.module""")
    out, callers = {}, {}
    for mod, site, cmod, caddr, cname, caller, count in rows:
        k = (os.path.realpath(mod), site)
        callers[k] = caller
        d = out.setdefault(k, {})
        ck = (os.path.realpath(cmod), caddr, cname)
        d[ck] = d.get(ck, 0) + count
    return out, callers


def report_arcs(reticle, db):
    """The text report's call arcs against the profile's call sites summed
    per (caller, callee): True when they are the same."""
    out = subprocess.run([reticle, "report", "--top", "0", "--no-demangle", db],
                         capture_output=True, text=True).stdout.splitlines()
    shown, inside = [], False
    for line in out:
        if line.startswith("calls between functions"):
            inside = True
        elif inside and line.strip() and not line.strip().startswith("calls"):
            m = re.match(r"\s*(\d+)  (\S+) -> (\S+)$", line)
            if not m:
                break
            shown.append((int(m.group(1)), m.group(2), m.group(3)))
    con = sqlite3.connect(db)
    rows = con.execute("""SELECT SUM(c.count), f1.name, f1.addr, f2.name, f2.addr FROM call_sites c
                          JOIN functions f1 ON f1.id = c.caller JOIN functions f2 ON f2.id = c.callee
                          GROUP BY c.caller, c.callee HAVING SUM(c.count) > 0""")
    want = sorted((n, a or f"sub_{x:x}", b or f"sub_{y:x}") for n, a, x, b, y in rows)
    if sorted(shown) != want:
        print(f"FAIL: the report's {len(shown)} call arcs are not the profile's {len(want)}")
        return False
    print(f"ok: the report's {len(shown)} call arcs are the profile's")
    return True


def compare(theirs, mine, callers, exe, only, tag):
    compared, ok = 0, True
    for (obj, site), callees in sorted(theirs.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        for (cob, target, cfn), n in sorted(callees.items(), key=lambda kv: str(kv[0])):
            if only is None:
                wanted = obj == exe or cob == exe
            else:
                wanted = cfn in only or callers.get((obj, site)) in only
            call = call_at(obj, site) if wanted and os.path.exists(obj) else None
            if not call:
                continue
            # a stub of .plt or .plt.got (callgrind names the latter by address)
            plt = (cfn is not None and "[PLT]" in cfn) or "@plt>" in call
            compared += 1
            got = mine.get((obj, site), {})
            if plt:
                r = sum(got.values()) if len(got) == 1 else None
                what = f"{os.path.basename(obj)}:{site:#x} -> {cfn}: callgrind={n} reticle={got or None}"
            else:
                r = sum(c for (m, a, _), c in got.items() if m == cob and a == target)
                what = f"{os.path.basename(obj)}:{site:#x} -> {cfn} ({target:#x}): callgrind={n} reticle={r}"
            if r != n:
                print(f"FAIL [{tag}]: " + what)
                ok = False
            else:
                print(f"ok   [{tag}]: " + what)
    return compared, ok


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    head = sys.argv[:sys.argv.index("--")]
    only = set(head[head.index("--only") + 1].split(",")) if "--only" in head else None
    prog = sys.argv[sys.argv.index("--") + 1:]
    exe = os.path.realpath(prog[0])
    os.makedirs(work, exist_ok=True)
    cg_out = os.path.join(work, "callgrind.out")
    native = subprocess.run(prog, capture_output=True)
    cg = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--skip-plt=no",
                         "--callgrind-out-file=" + cg_out] + prog, capture_output=True)
    ok = cg.returncode == native.returncode
    theirs = parse_arcs(cg_out)
    cache = os.path.join(work, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    total = 0
    for tag in ("cold", "warm"):
        db = os.path.join(work, f"callgraph-{tag}.db")
        rt = subprocess.run([reticle, "run", "-c", "callgraph", "-o", db, "--"] + prog,
                            capture_output=True, env=dict(os.environ, RETICLE_CACHE_DIR=cache))
        if rt.stdout != native.stdout or rt.returncode != native.returncode:
            print(f"FAIL [{tag}]: output or exit status differs from the native run "
                  f"(rc {rt.returncode} vs {native.returncode}): {rt.stderr.decode(errors='replace')[-400:]}")
            ok = False
            continue
        mine, callers = reticle_arcs(db)
        n, good = compare(theirs, mine, callers, exe, only, tag)
        good = report_arcs(reticle, db) and good
        total += n
        ok = ok and good
    if total == 0:
        print("FAIL: no arc compared")
        ok = False
    print(f"{total} arcs compared: {'all equal' if ok else 'DIFFERENCES'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
