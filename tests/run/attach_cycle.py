"""What the attach/detach tests (attach_*.py) share: a fresh work directory
and reticle's environment for it, FAIL lines and the exit status, an attach
that returns once reticle instruments, a detach, and what "left as it was"
means: no mapping of reticle's, untraced, the text equal to the files."""
import os, subprocess, sys, time
from checks import Checks


def text_diffs(pid):
    """The executable file mappings of PID whose bytes differ from the file's."""
    bad = []
    with open(f"/proc/{pid}/maps") as f:
        maps = [line.split(None, 5) for line in f]
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for f in maps:
            if len(f) < 6 or "x" not in f[1] or not f[5].startswith("/") or "(deleted)" in f[5]:
                continue
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            mem.seek(lo)
            got = mem.read(hi - lo)
            with open(f[5].strip(), "rb") as fh:
                fh.seek(int(f[2], 16))
                want = fh.read(hi - lo)
            if got[:len(want)] != want[:len(got)]:
                bad.append(f[5].strip())
    return bad


class Session(Checks):
    def __init__(self, reticle, work, **env):
        super().__init__(work, XDG_RUNTIME_DIR=work, **env)
        self.reticle = reticle

    def attach(self, pid, what, collector="fcount"):
        """reticle attach -c COLLECTOR -o WORK/WHAT.db PID, once it says it
        instruments: (the process, its stderr's file, the profile), or None
        after a FAIL when it ended first. Exits 77 when the machine does
        not let reticle trace a process."""
        name = what.replace(" ", "")
        errf, db = os.path.join(self.work, name + ".err"), os.path.join(self.work, name + ".db")
        with open(errf, "w") as e:
            a = subprocess.Popen([self.reticle, "attach", "-c", collector, "-o", db, str(pid)], stderr=e,
                                 env=self.env)
        while "instrumenting" not in open(errf).read() and a.poll() is None:
            time.sleep(0.05)
        if a.poll() is None:
            return a, errf, db
        err = open(errf).read()
        if "not allowed" in err:
            print("SKIP: " + err.strip())
            sys.exit(77)
        self.fail(f"{what}: attach exited {a.returncode}: {err}")
        return None

    def detach(self, pid, attached, what):
        """reticle detach PID, and the end of ATTACHED (attach's result):
        its stderr; a FAIL when either failed or a window stays mapped."""
        a, errf, _ = attached
        d = subprocess.run([self.reticle, "detach", str(pid)], capture_output=True, text=True, env=self.env,
                           timeout=60)
        a.wait(timeout=60)
        err = open(errf).read()
        if d.returncode or a.returncode or "stays mapped" in err:
            self.fail(f"{what}: detach {d.returncode} {d.stderr.strip()}, attach {a.returncode}: "
                      + "\n".join(line for line in err.splitlines() if "stop kind" not in line)[-2000:])
        return err

    def left_as_it_was(self, pid, what):
        """Whether PID has no mapping of reticle's, no tracer and the text of
        its files (a FAIL when not)."""
        left = [line.strip() for line in open(f"/proc/{pid}/maps") if "reticle" in line]
        traced = "TracerPid:\t0\n" not in open(f"/proc/{pid}/status").read()
        diffs = text_diffs(pid)
        if left or traced or diffs:
            self.fail(f"{what}: not left as it was: mappings {left[:3]}, traced {traced}, text differs {diffs}")
        return not (left or traced or diffs)
