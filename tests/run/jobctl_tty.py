#!/usr/bin/env python3
"""Ctrl-Z on a terminal, as in an interactive shell: a job-control "shell"
runs the job in its own process group in the foreground of a pseudo
terminal, the test types Ctrl-Z, the shell sees its child stop, takes the
terminal back, checks that the program really stands still, and continues
the job with `fg` (SIGCONT to the process group) or with SIGCONT to the
child's pid alone; once more with the program in a pipeline. The job is the program itself (the oracle) or reticle
running it; both must stop with SIGTSTP after the program's own SIGTSTP
handler ran, make no progress while stopped, and end with the same output
and exit status.

usage: jobctl_tty.py RETICLE WORKDIR JOBSTOP-PROGRAM"""
import fcntl, json, os, signal, sys, termios, time

TICKS = 1000


def job_states(pgrp):
    """State letters of the processes of process group PGRP."""
    states = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgrp:
            states.append(fields[0])
    return states


def shell(cmd, tty, pidfile, outfile, report, cont):
    """The job-control shell, a session leader on TTY. Never returns."""
    signal.alarm(60)   # nothing may hang
    os.setsid()
    fcntl.ioctl(tty, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    me = os.getpgrp()
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(tty, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        signal.alarm(0)
        os.dup2(tty, 0)
        out = os.open(outfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(outfile + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.execv(cmd[0], cmd)
    try:   # as shells do; fails once the child has exec'd, having done it itself
        os.setpgid(job, job)
        os.tcsetpgrp(tty, job)
    except PermissionError:
        pass
    r = {}
    _, status = os.waitpid(job, os.WUNTRACED)
    r["stopped_by"] = signal.Signals(os.WSTOPSIG(status)).name if os.WIFSTOPPED(status) else None
    if os.WIFSTOPPED(status):
        os.tcsetpgrp(tty, me)   # the shell has the terminal back
        # natively the shell sees `sh` of a pipeline stop, maybe before the
        # others: measure once the whole job has stopped
        for _ in range(500):
            if all(st in ("T", "t") for st in job_states(job)):
                break
            time.sleep(0.01)
        with open(pidfile) as f:
            target = int(f.read())
        out1 = open(outfile).read()
        time.sleep(0.5)
        out2 = open(outfile).read()
        with open(f"/proc/{target}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        r["stood_still"] = out1 == out2 and state in ("T", "t")
        r["handler_ran_before_stop"] = "TSTP: terminal restored" in out1
        if cont == "fg":
            os.tcsetpgrp(tty, job)
            os.killpg(job, signal.SIGCONT)
        else:
            os.kill(job, signal.SIGCONT)
        _, status = os.waitpid(job, os.WUNTRACED)
        if os.WIFSTOPPED(status):
            r["stopped_again_by"] = signal.Signals(os.WSTOPSIG(status)).name
            os.killpg(job, signal.SIGKILL)
            _, status = os.waitpid(job, 0)
    r["exit"] = os.waitstatus_to_exitcode(status)
    with open(report, "w") as f:
        json.dump(r, f)
    os._exit(0)


def run(cmd, work, label, cont):
    pidfile = os.path.join(work, label + ".pid")
    outfile = os.path.join(work, label + ".out")
    report = os.path.join(work, label + ".json")
    for f in (pidfile, report):
        if os.path.exists(f):
            os.unlink(f)
    master, slave = os.openpty()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            shell(cmd, slave, pidfile, outfile, report, cont)
        except BaseException as e:
            with open(report, "w") as f:
                json.dump({"error": f"shell: {e!r}"}, f)
        finally:
            os._exit(99)
    os.close(slave)
    deadline = time.time() + 30
    while not (os.path.exists(pidfile) and os.path.getsize(pidfile)) and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    os.write(master, b"\x1a")   # Ctrl-Z
    _, status = os.waitpid(pid, 0)
    os.close(master)
    if not os.path.exists(report):
        return {"error": f"shell ended with status {status} and no report"}, ""
    with open(report) as f:
        r = json.load(f)
    return r, open(outfile).read()


def normalize(out):
    """Tick lines must be 1..TICKS in order; where Ctrl-Z fell among them
    depends on timing, so they are replaced by their count."""
    ticks = [int(l.split()[1]) for l in out.splitlines() if l.startswith("tick ")]
    other = [l for l in out.splitlines() if not l.startswith("tick ")]
    return {"ticks_in_order": ticks == list(range(1, TICKS + 1)), "other_lines": other}


def main():
    reticle, work, prog = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    ok = True
    # (name, how the job is continued, pipeline): in a pipeline the job
    # stops once each of its processes has (cat stops at once, the
    # program after its handler ran)
    for name, cont, pipe in (("fg", "fg", False), ("kill-pid", "kill-pid", False),
                             ("pipeline", "fg", True)):
        results = {}
        for who in ("native", "reticle"):
            label = f"{who}-{name}"
            pidfile = os.path.join(work, label + ".pid")
            cmd = [prog, "ticker", pidfile, str(TICKS)]
            if pipe:
                cmd = ["/bin/sh", "-c", " ".join(cmd) + " | cat; exit 7"]
            if who == "reticle":
                cmd = [reticle, "run", "-o", os.path.join(work, label + ".db"), "--"] + cmd
            r, out = run(cmd, work, label, cont)
            r.update(normalize(out))
            results[who] = r
            print(f"{label}: {json.dumps(r)}")
        nat, ret = results["native"], results["reticle"]
        want = {"stopped_by": "SIGTSTP", "stood_still": True,
                "handler_ran_before_stop": True, "ticks_in_order": True, "exit": 7}
        if pipe:
            # whether the handler's line got through cat before cat itself
            # stopped is a race, natively too. What counts: reticle stops
            # only once every process of the job has (else the program,
            # held in a ptrace stop before its handler ran, would stop
            # again after `fg`, for good, and this test would time out)
            nat.pop("handler_ran_before_stop")
            ret.pop("handler_ran_before_stop")
        for who, r in results.items():
            for k, v in want.items():
                if k in r and r.get(k) != v or k not in r and k != "handler_ran_before_stop":
                    print(f"FAIL [{who}-{name}]: {k} is {r.get(k)!r}, want {v!r}")
                    ok = False
        if ret != nat:
            print(f"FAIL [reticle-{name}]: differs from the native run")
            ok = False
    if not ok:
        for f in sorted(os.listdir(work)):
            if f.endswith(".err") and os.path.getsize(os.path.join(work, f)):
                print(f"--- {f}:\n" + open(os.path.join(work, f)).read()[-1500:])
    print("all Ctrl-Z cases passed" if ok else "some Ctrl-Z cases failed")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
