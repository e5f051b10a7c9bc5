#!/usr/bin/env python3
"""reticle top PID on a process a `reticle probe` session measures: top
watches through the session's control socket (no second tracer), and the
probe hits it shows per function add up, over its refreshes, to the calls
the program says it made meanwhile (programs/probe_ctl_target.c: "run K N"
calls step() 2N times); spin's hits show in every refresh; the session's
own result is unchanged; top on a session that has ended says so.

usage: top_session.py RETICLE WORKDIR TARGET"""
import os, re, shutil, subprocess, sys, time

reticle, work, target = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), XDG_RUNTIME_DIR=work)
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


agg = os.path.join(work, "agg.txt")
p = subprocess.Popen([reticle, "probe", "-r", agg, "entry:step { @step = count(); }\nentry:spin { @spin = count(); }",
                      "--", target], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True, env=env)
assert p.stdout.readline().strip() == "ready"
pid = int(subprocess.run(["pgrep", "-P", str(p.pid), "-f", os.path.basename(target)], capture_output=True,
                         text=True).stdout.split()[0])
for _ in range(200):   # the session listens once it runs
    if subprocess.run([reticle, "ctl", str(pid), "list"], capture_output=True, env=env).returncode == 0:
        break
    time.sleep(0.05)
top = subprocess.Popen([reticle, "top", "--iterations", "4", "--interval", "0.5", str(pid)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
time.sleep(0.6)   # after top's first look, its base
made = 0
for k, n in ((3, 5000), (6, 7000)):
    p.stdin.write(f"run {k} {n}\n")
    p.stdin.flush()
    while not p.stdout.readline().startswith("ran"):
        pass
    made += 2 * n
out, err = top.communicate(timeout=60)
if top.returncode != 0:
    fail(f"top: exit {top.returncode}: {err}")
frames = out.split("--- ")[1:]
step = spin_frames = 0
for f in frames:
    if "'reticle probe' session" not in f:
        fail(f"top did not watch through the session: {f[:200]!r}")
    for line in f.splitlines():
        m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)$", line)
        if m and m.group(5) == "step":
            step += int(m.group(4))
        if m and m.group(5) == "spin" and int(m.group(4)) > 0:
            spin_frames += 1
if len(frames) != 4 or step != made or spin_frames != 4:
    fail(f"{len(frames)} refreshes, step's hits {step} (the program made {made}), spin in {spin_frames}:\n{out}")
p.stdin.write("quit\n")
p.stdin.flush()
p.communicate(timeout=60)
got = dict(re.findall(r"^@(\w+): (\d+)$", open(agg).read(), re.M))
if int(got.get("step", -1)) != made:
    fail(f"the session's own count of step: {got.get('step')} (the program made {made})")
r = subprocess.run([reticle, "top", "--iterations", "1", str(pid)], capture_output=True, text=True, env=env,
                   timeout=30)
if r.returncode == 0:
    fail(f"top of a process that is gone: exit 0: {r.stdout} {r.stderr}")
print(f"{'FAILED' if fails else 'ok'}: {len(frames)} refreshes, step's hits {step} of {made}")
sys.exit(1 if fails else 0)
