#!/usr/bin/env python3
"""examples/scripts/sample_every.lua (reticle.attach, p:samples()): on a
running process that spins, two rounds of half a second a second apart;
each round samples about its half second (0.1-0.7 s of CPU) and puts the
program's spin first, and the process runs on, unchanged, to its end.
Skips (77) where this machine does not let reticle sample.

usage: sample_every_oracle.py RETICLE WORKDIR SCRIPT SPINNER"""
import os, re, shutil, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run"))
import sampling

reticle, work, script, spinner = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), TMPDIR=work)
sampling.require(reticle)
fails = 0
target = subprocess.Popen([spinner, "3"], stdout=subprocess.PIPE, text=True)
target.stdout.readline()   # "ready"
r = subprocess.run([reticle, "script", script, str(target.pid), "1", "0.5", "2", "3"], capture_output=True,
                   text=True, env=env, timeout=120)
print(r.stdout)
rounds = re.findall(r"round (\d+) \([0-9:]+\): ([0-9.]+) s sampled\n\s+([0-9.]+)%\s+(\S+)", r.stdout)
if r.returncode != 0 or len(rounds) != 2:
    fails += 1
    print(f"FAIL: exit {r.returncode}, {len(rounds)} rounds\n{r.stderr}")
for n, secs, share, name in rounds:
    if not 0.1 <= float(secs) <= 0.7 or name != "spin" or float(share) < 50:
        fails += 1
        print(f"FAIL: round {n}: {secs} s sampled, first {name} {share}%")
out, _ = target.communicate(timeout=60)
if target.returncode != 0 or "truth at_main" not in out:
    fails += 1
    print(f"FAIL: the process ended with {target.returncode}: {out!r}")
if [f for f in os.listdir(work) if f.endswith(".db")]:
    fails += 1
    print("FAIL: the script left profiles behind")
print(f"{fails} failure(s)")
sys.exit(1 if fails else 0)
