#!/usr/bin/env python3
"""cover alone leaves out the probes of blocks whose run follows from their
successors' (x86_cfg_implied_blocks: a block that always goes on to blocks
it dominates ran exactly when one of them ran), and lays its increments out
by cache line. Checked per block, on real programs.

usage: cover_implied.py RETICLE WORKDIR

(lua5.4 is left out: it seeds its string hashes from the clock, so two
runs take different paths.)

Each program runs under `-c cover` and under `-c cover` with
RETICLE_COVER_KEEP=1 (every block counts to the end, as bbcount counts: its
own oracle is the bbcount/callgrind tests), each cold then warm (copies
restored from the cache), compared cold with cold and warm with warm,
with address randomization off (setarch -R: string functions branch on
addresses) and environments of one size. Checked: output and exit status
as natively; every block of every function both runs hold ran in one
exactly when it ran in the other; and probes were left out (fewer removed
than blocks ran). A program that is not installed is skipped."""
import json, os, shutil, sqlite3, subprocess, sys

fails = 0
SQL = ("create table t(a integer primary key, b text);"
       "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000) "
       "insert into t select x, hex(x * 7919) from c;"
       "select count(*), sum(length(b)) from t where b like '%A%';"
       "create index tb on t(b); select a from t order by b limit 3;")
PROGRAMS = [
    ("sqlite3", ["sqlite3", ":memory:"], SQL),
    ("python3", ["/usr/bin/python3", "-c", "import json, re; d = {str(i): i * i for i in range(20000)};"
                 "print(len(json.dumps(d)), len(re.findall('1+', json.dumps(d))))"], None),
    ("bzip2", ["bzip2", "-c"], "".join(f"{i} {i * 7919 % 1000003} lorem ipsum\n" for i in range(60000))),
]


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def blocks(db):
    """(module, function address, block address) -> ran, for one process."""
    with sqlite3.connect(db) as c:
        rows = c.execute("select m.path, f.addr, b.addr, b.count > 0 from blocks b join functions f "
                         "on f.id = b.function join modules m on m.id = f.module").fetchall()
    return {(m, f, b): bool(r) for m, f, b, r in rows}


def removed(reticle, db):
    r = subprocess.run([reticle, "report", "--format", "json", db], capture_output=True, text=True)
    return int(json.loads(r.stdout)["meta"].get("cover_probes_removed", 0)) if r.returncode == 0 else -1


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    setarch = shutil.which("setarch")
    norand = [setarch, "-R"] if setarch and subprocess.run([setarch, "-R", "true"]).returncode == 0 else []
    if not norand:
        print("note: no setarch -R: address-dependent blocks may differ")
    ran_any = False
    for name, prog, stdin in PROGRAMS:
        exe = shutil.which(prog[0])
        if not exe:
            print(f"skip: {name} is not installed")
            continue
        ran_any = True
        base = dict(os.environ, PYTHONHASHSEED="0")
        data = stdin.encode() if stdin else None
        native = subprocess.run(norand + prog, input=data, capture_output=True, env=base)
        if native.returncode:
            fail(f"{name} natively: exit {native.returncode}: {native.stderr[-300:]}")
            continue
        runs = {}
        for keep in ("0", "1"):
            for temp in ("cold", "warm"):
                db = os.path.join(work, f"{name}-{keep}-{temp}.db")
                # one size of environment: addresses on the stack alike
                env = dict(base, RETICLE_COVER_KEEP=keep, RETICLE_CACHE_DIR=os.path.join(work, f"cache-{name}-{keep}"))
                r = subprocess.run(norand + [reticle, "run", "-c", "cover", "-o", db, "--"] + prog, input=data,
                                   capture_output=True, env=env)
                if (r.returncode, r.stdout) != (native.returncode, native.stdout):
                    fail(f"{name} {temp} (keep {keep}): exit {r.returncode}, natively {native.returncode}, "
                         f"output {'the same' if r.stdout == native.stdout else 'differs'}: "
                         f"{r.stderr.decode(errors='replace')[-500:]}")
                    continue
                runs[keep, temp] = db
        for mode in ("cold", "warm"):
            if ("0", mode) not in runs or ("1", mode) not in runs:
                continue
            kept = blocks(runs["1", mode])
            nran = sum(kept.values())
            got = blocks(runs["0", mode])
            common = set(got) & set(kept)
            diff = sorted(k for k in common if got[k] != kept[k])
            gone = removed(reticle, runs["0", mode])
            if len(common) < 0.9 * len(kept) or diff:
                fail(f"{name} {mode}: {len(diff)} of {len(common)} blocks differ (ran swept/kept): "
                     f"{[(k, got[k], kept[k]) for k in diff[:6]]}")
            elif not 0 < gone < nran:
                fail(f"{name} {mode}: {gone} probes removed for {nran} blocks ran: none left out")
            else:
                print(f"ok: {name} {mode}: {len(common)} blocks, {nran} ran, as with every probe kept; "
                      f"{gone} probes fired ({nran - gone} blocks or more told by their successors)")
    if not ran_any:
        print("skip: none of sqlite3, python3, bzip2 is installed")
        sys.exit(77)
    print(f"{fails} failure(s)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
