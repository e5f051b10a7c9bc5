#!/usr/bin/env python3
"""One profile per run, with the process tree inside: runs a program that
forks, execs and prints its own shape (tests/run/programs/proctree.c) under
reticle, and checks against what the program printed:
- one profile file, nothing beside it;
- one process image per image the program reports, with its pid, kind
  (launch, fork, exec), parent image and exit status (as its parent reaped
  it; none for an image replaced by exec);
- per image (--process ID), the calls of mark() the image reports; merged
  (the default), their sum; the merged Ir and calls are the sums of the
  images' own.
usage: proc_tree.py RETICLE WORKDIR PROGRAM"""
import json
import os
import shutil
import subprocess
import sys


def report(reticle, db, *args):
    r = subprocess.run([reticle, "report", "--format", "json", "--all", *args, db],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: reticle report {' '.join(args)}: {r.stderr}")
    return json.loads(r.stdout)


def calls_of(rep, name):
    return sum(f.get("calls") or 0 for f in rep["functions"] if f["name"] == name)


def main():
    reticle, work, prog = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db = os.path.join(work, "tree.db")
    r = subprocess.run([reticle, "run", "-c", "fcount,bbcount", "-o", db, "--", prog],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 5:
        sys.exit(f"FAIL: exit status {r.returncode}, expected 5\n{r.stderr}")
    files = sorted(os.listdir(work))
    if files != ["tree.db"]:
        sys.exit(f"FAIL: expected one profile, found {files}")
    images, reaped = [], {}
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == "image":
            images.append({"pid": int(w[1]), "parent_pid": int(w[2]), "kind": w[3], "marks": int(w[4])})
        elif w[0] == "reaped":
            reaped[int(w[1])] = int(w[2])
    ok = True
    merged = report(reticle, db)
    procs = merged["processes"]
    by_id = {p["id"]: p for p in procs}
    if len(procs) != len(images):
        print(f"FAIL: {len(procs)} process images in the profile, the program reports {len(images)}")
        ok = False
    total_marks, sum_ir, sum_calls = 0, 0, 0
    for im in images:
        # the image: same pid and kind (a pid has one fork/launch image and maybe an exec one)
        cand = [p for p in procs if p["pid"] == im["pid"] and p["kind"] == im["kind"]]
        if len(cand) != 1:
            print(f"FAIL: image {im}: {len(cand)} matching process rows")
            ok = False
            continue
        p = cand[0]
        parent = by_id.get(p["parent"])
        parent_pid = parent["pid"] if parent else 0
        if parent_pid != im["parent_pid"]:
            print(f"FAIL: image {im}: parent pid {parent_pid} in the profile")
            ok = False
        replaced = any(q["parent"] == p["id"] and q["kind"] == "exec" for q in procs)
        want = None if replaced else reaped.get(im["pid"], 5 if im["kind"] == "launch" else None)
        if p["exit_status"] != want:
            print(f"FAIL: image {im}: exit status {p['exit_status']}, expected {want}")
            ok = False
        one = report(reticle, db, "--process", str(p["id"]))
        got = calls_of(one, "mark")
        if got != im["marks"]:
            print(f"FAIL: image {im}: mark() called {got} times in --process {p['id']}")
            ok = False
        if one["totals"]["instrs"] != p["instrs"] or one["totals"]["calls"] != p["calls"]:
            print(f"FAIL: image {p['id']}: totals {one['totals']} differ from its tree row {p}")
            ok = False
        total_marks += im["marks"]
        sum_ir += one["totals"]["instrs"]
        sum_calls += one["totals"]["calls"]
    if calls_of(merged, "mark") != total_marks:
        print(f"FAIL: merged: mark() called {calls_of(merged, 'mark')} times, images say {total_marks}")
        ok = False
    if merged["totals"]["instrs"] != sum_ir or merged["totals"]["calls"] != sum_calls:
        print(f"FAIL: merged totals {merged['totals']} are not the sums of the images' "
              f"(Ir {sum_ir}, calls {sum_calls})")
        ok = False
    bad = subprocess.run([reticle, "report", "--process", str(len(procs) + 1), db], capture_output=True, text=True)
    if bad.returncode == 0 or "no process image" not in bad.stderr:
        print(f"FAIL: --process of an unknown image: exit {bad.returncode}, {bad.stderr!r}")
        ok = False
    tree = subprocess.run([reticle, "report", "--tree", db], capture_output=True, text=True)
    if tree.returncode or len(tree.stdout.splitlines()) != len(procs) + 1:
        print(f"FAIL: --tree: exit {tree.returncode}\n{tree.stdout}{tree.stderr}")
        ok = False
    print(tree.stdout, end="")
    print(f"{len(images)} images, {total_marks} marks, Ir {sum_ir}: {'ok' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
