#!/usr/bin/env python3
"""MPI programs under reticle (Open MPI and MPICH, 4 ranks on this
machine): `mpirun -np 4 reticle run -o p.db -- app` writes p.rank0.db ...
p.rank3.db, each marked with its rank and the job's size, the program's
output as without reticle; `reticle merge` makes one profile whose report
names the deliberately imbalanced function first among the program's own,
with its least and most loaded ranks and max/mean; each rank's count of it
equals a single-rank run of the same work; merging another program's
profile warns. Skipped (77) when neither MPI is installed.

usage: mpi.py RETICLE WORKDIR SOURCE"""
import os, re, shutil, sqlite3, subprocess, sys

reticle, work, source = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
fails = 0
root = os.geteuid() == 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def mpirun(flavor, n, cmd):
    args = ["mpirun." + flavor, "-np", str(n)]
    if flavor == "openmpi":
        args += ["--oversubscribe"] + (["--allow-run-as-root"] if root else [])
    return subprocess.run(args + cmd, capture_output=True, text=True, env=env, timeout=300, cwd=work)


def work_ir(db):
    """The program's `work` instructions per rank (a rank file: one)."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT coalesce(p.rank, -1), sum(f.instrs) FROM functions f JOIN modules m ON m.id = f.module"
                       " JOIN processes p ON p.id = m.process WHERE f.name = 'work' GROUP BY p.rank").fetchall()
    return dict(rows)


flavors = [f for f in ("openmpi", "mpich") if shutil.which("mpicc." + f) and shutil.which("mpirun." + f)]
if not flavors:
    print("SKIP: no MPI (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev)")
    sys.exit(77)
for flavor in flavors:
    app = os.path.join(work, "app_" + flavor)
    subprocess.run(["mpicc." + flavor, "-O2", "-g", "-o", app, source], check=True)
    native = mpirun(flavor, 4, [app, "0"])
    p = os.path.join(work, f"{flavor}.db")
    r = mpirun(flavor, 4, [reticle, "run", "-c", "bbcount", "-o", p, "--", app, "0"])
    if r.returncode or r.stdout != native.stdout:
        fail(f"{flavor}: status {r.returncode}, output {r.stdout!r} natively {native.stdout!r}: {r.stderr[-300:]}")
        continue
    ranks = [os.path.join(work, f"{flavor}.rank{k}.db") for k in range(4)]
    for k, db in enumerate(ranks):
        if not os.path.exists(db):
            fail(f"{flavor}: no {db}")
            continue
        meta = dict(sqlite3.connect(db).execute("SELECT key, value FROM meta"))
        if meta.get("mpi_rank") != str(k) or meta.get("mpi_size") != "4":
            fail(f"{flavor}: {db} meta rank {meta.get('mpi_rank')} size {meta.get('mpi_size')}")
    merged = os.path.join(work, f"{flavor}.all.db")
    r = subprocess.run([reticle, "merge", "-o", merged] + ranks, capture_output=True, text=True)
    if r.returncode:
        fail(f"{flavor}: merge {r.returncode} {r.stderr}")
        continue
    per_rank = work_ir(merged)
    rep = subprocess.run([reticle, "report", "--top", "0", merged], capture_output=True, text=True).stdout
    table = rep[rep.find("load imbalance across 4 ranks"):]
    own = [l for l in table.splitlines() if f"(app_{flavor})" in l]
    if not own or not re.search(r"\swork \(", own[0]):
        fail(f"{flavor}: the imbalance table does not put work first among the program's: {own[:2]}")
    else:
        m = re.match(r"\s*(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\S+)\s+([\d.]+)", own[0])
        vals = [per_rank.get(k, 0) for k in range(4)]
        mean = sum(vals) / 4
        if not m or int(m.group(2)) != min(vals) or int(m.group(4)) != max(vals) or \
                m.group(3) != str(vals.index(min(vals))) or m.group(5) != str(vals.index(max(vals))) or \
                abs(float(m.group(6)) - max(vals) / mean) > 0.001:
            fail(f"{flavor}: work's row {own[0]!r}, per rank {vals}")
    # each rank's work equals a single-rank run of the same work
    for k in range(4):
        one = os.path.join(work, f"{flavor}.one{k}.db")
        r = mpirun(flavor, 1, [reticle, "run", "-c", "bbcount", "-o", one, "--", app, str(k)])
        # a rank's own file has no merged rank: its one row
        single = list(work_ir(os.path.join(work, f"{flavor}.one{k}.rank0.db")).values())
        if r.returncode or [per_rank.get(k)] != single:
            fail(f"{flavor}: rank {k}'s work {per_rank.get(k)}, a single-rank run {single}")
    print(f"{flavor}: 4 ranks, work per rank {[per_rank.get(k) for k in range(4)]}")

# another program's profile: merged, with a warning
other = os.path.join(work, "true.db")
subprocess.run([reticle, "run", "-o", other, "--", "/bin/true"], capture_output=True, env=env)
first = os.path.join(work, f"{flavors[0]}.rank0.db")
r = subprocess.run([reticle, "merge", "-o", os.path.join(work, "mixed.db"), first, other],
                   capture_output=True, text=True)
if r.returncode or "warning" not in r.stderr or "different programs" not in r.stderr:
    fail(f"merge of two programs: {r.returncode} {r.stderr}")
r = subprocess.run([reticle, "merge", "-o", os.path.join(work, "x.db"), os.path.join(work, "none.db")],
                   capture_output=True, text=True)
if r.returncode != 1 or len(r.stderr.splitlines()) != 1 or os.path.exists(os.path.join(work, "x.db")):
    fail(f"merge of a missing profile: {r.returncode} {r.stderr}")
print(f"{fails} failures")
sys.exit(1 if fails else 0)
