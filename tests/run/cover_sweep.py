#!/usr/bin/env python3
"""cover's probes remove themselves once fired (engine/sweep.c).

usage: cover_sweep.py RETICLE WORKDIR -- PROGRAM ARGS

PROGRAM (programs/cover_phases.c) runs long enough for several sweeps,
with code first run late, a thread and a fork child. It runs under
`-c cover` (probes swept) and under `-c cover` with RETICLE_COVER_KEEP=1
(probes counting to the end, as bbcount does: what the gcov tests check),
cold and warm. Checked: the same output and exit status as natively;
probes were removed (meta cover_probes_removed above 0, none kept); in
each process image (the parent and its fork child, whose copies of the
parent's removed probes must count again) the source lines that ran, as
the lcov export gives them, are the same set in both runs; every count of
the swept run is 0 or 1; hot copies were given up for the original code
(meta cover_copies_given_up above 0, unless RETICLE_COVER_ORIGINAL=0), in
the warm run at least half as many as in the cold one."""
import json, os, shutil, sqlite3, subprocess, sys

fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def lines(reticle, db, image):
    r = subprocess.run([reticle, "report", "--format", "lcov", "--process", str(image), db],
                       capture_output=True, text=True)
    if r.returncode:
        fail(f"lcov of {db} image {image}: {r.stderr}")
    ran, counts, sf = set(), set(), None
    for line in r.stdout.splitlines():
        if line.startswith("SF:"):
            sf = line[3:]
        elif line.startswith("DA:"):
            n, c = line[3:].split(",")[:2]
            counts.add(int(c))
            if int(c):
                ran.add((sf, int(n)))
    return ran, counts


def blocks(db, image, path):
    """(function, block address) -> ran, of PATH's blocks in process IMAGE."""
    with sqlite3.connect(db) as c:
        rows = c.execute("select f.name, f.addr, b.addr, b.count > 0 from blocks b join functions f "
                         "on f.id = b.function join modules m on m.id = f.module "
                         "where m.process = ? and m.path = ?", (image, path)).fetchall()
    return {(n, f, b): bool(r) for n, f, b, r in rows}


def meta(reticle, db):
    r = subprocess.run([reticle, "report", "--format", "json", db], capture_output=True, text=True)
    d = json.loads(r.stdout) if r.returncode == 0 else {"meta": {}, "processes": []}
    return d["meta"], d["processes"]


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    prog = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    native = subprocess.run(prog, capture_output=True, text=True)
    cold_given_up = 0
    for temp in ("cold", "warm"):
        dbs = {}
        for mode, extra in (("swept", {}), ("kept", {"RETICLE_COVER_KEEP": "1"})):
            env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache-" + mode), **extra)
            db = os.path.join(work, f"{mode}-{temp}.db")
            r = subprocess.run([reticle, "run", "-c", "cover", "-o", db, "--"] + prog, capture_output=True,
                               text=True, env=env)
            if (r.returncode, r.stdout) != (native.returncode, native.stdout):
                fail(f"{mode} {temp}: exit {r.returncode} output {r.stdout!r}, natively {native.returncode} "
                     f"{native.stdout!r}: {r.stderr}")
            dbs[mode] = db
        m_s, procs_s = meta(reticle, dbs["swept"])
        m_k, procs_k = meta(reticle, dbs["kept"])
        removed = int(m_s.get("cover_probes_removed", 0))
        if removed <= 0 or "cover_probes_removed" in m_k:
            fail(f"{temp}: {removed} probes removed, kept run's meta {m_k.get('cover_probes_removed')}")
        given_up = int(m_s.get("cover_copies_given_up", 0))
        if given_up <= 0 and os.environ.get("RETICLE_COVER_ORIGINAL") != "0":
            fail(f"{temp}: no copy given up for the original code")
        # copies restored from the warm cache are given up as fresh ones
        # are (their decoding, saved without a CFG, once refused them all)
        if temp == "warm" and given_up * 2 < cold_given_up:
            fail(f"warm: {given_up} copies given up, cold {cold_given_up}")
        cold_given_up = given_up
        if [p["kind"] for p in procs_s] != [p["kind"] for p in procs_k] or len(procs_s) < 2:
            fail(f"{temp}: images {procs_s} against {procs_k}")
            continue
        for ps, pk in zip(procs_s, procs_k):
            ran_s, counts = lines(reticle, dbs["swept"], ps["id"])
            ran_k, _ = lines(reticle, dbs["kept"], pk["id"])
            if ran_s != ran_k:
                fail(f"{temp} image {ps['id']} ({ps['kind']}): lines ran differ: only swept "
                     f"{sorted(ran_s - ran_k)[:8]}, only kept {sorted(ran_k - ran_s)[:8]}")
            elif counts - {0, 1}:
                fail(f"{temp} image {ps['id']}: counts {sorted(counts)[:8]} in the swept run")
            else:
                print(f"ok: {temp} image {ps['id']} ({ps['kind']}): {len(ran_s)} lines ran, as with probes kept")
            # per block too: a line can have blocks in two functions (split.cold's)
            b_s = blocks(dbs["swept"], ps["id"], os.path.realpath(prog[0]))
            b_k = blocks(dbs["kept"], pk["id"], os.path.realpath(prog[0]))
            diff = sorted(k for k in b_s.keys() | b_k.keys() if b_s.get(k) != b_k.get(k))
            if diff or not b_s:
                fail(f"{temp} image {ps['id']}: {len(b_s)} blocks; ran differently: "
                     f"{[(k, b_s.get(k), b_k.get(k)) for k in diff[:8]]}")
        print(f"ok: {temp}: {removed} probes removed, {given_up} copies given up")
    print(f"{fails} failure(s)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
