#!/usr/bin/env python3
"""reticle debug, driven through a pseudo-terminal as a user types.

On PROG (programs/backtrace_throw.cpp, symbols): a breakpoint by name,
run, the backtrace against gdb's for the same stop (names of the frames;
when gdb is here), the registers (rip is the copy address the stop shows),
memory (the word at rsp is frame 1's return address), stepi, disassembly
side by side (the original column's mnemonics equal objdump's), info
breakpoints (one hit), delete, continue to the end: the program's output
as natively, in order, and its exit status.

On a stripped copy of PROG_NOPIE: a breakpoint by address (nm of the
unstripped file), hit, program unchanged. An unknown command is named.

On CRASH (programs/crash.c segv) under `reticle run --debug-on-fault`: the
prompt opens at the SIGSEGV with a backtrace through main; continue: the
program dies of it as natively (exit 139).

On THREADS (programs/threads.c): a breakpoint that several threads hit,
met three times, deleted while other threads may have met it already,
then continue: the program ends as natively (a thread that met the int3
before the deletion is served, not killed by its SIGTRAP).

On LOOP (programs/probe_loop.c, runs until killed) with -p: attached, a
breakpoint hit, a backtrace through main, quit detaches: the process runs
on without reticle's mappings.

usage: debug_pty.py RETICLE WORKDIR PROG PROG_NOPIE CRASH THREADS LOOP"""
import os, pty, re, select, shutil, signal, subprocess, sys, time

reticle, work, prog, prog_nopie, crash, threads, loop = sys.argv[1:8]
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


class Session:
    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(argv[0], argv, env)
        self.out = ""

    def read_until(self, pattern, timeout=60):
        self.read_until_from(0, pattern, timeout)
        return self.out

    def cmd(self, line, until=r"\(reticle\) $"):
        """Types LINE; the text printed up to the next prompt."""
        mark = len(self.out)
        os.write(self.fd, (line + "\n").encode())
        self.read_until_from(mark, until)
        return self.out[mark:]

    def read_until_from(self, mark, pattern, timeout=60):
        end = time.time() + timeout
        while not re.search(pattern, self.out[mark:]):
            left = end - time.time()
            if left <= 0:
                raise TimeoutError(f"waited for {pattern!r}; got:\n{self.out[mark:][-3000:]}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    raise EOFError(f"ended before {pattern!r}; got:\n{self.out[mark:][-3000:]}")
                self.out += data.decode(errors="replace").replace("\r\n", "\n")

    def finish(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                self.out += data.decode(errors="replace").replace("\r\n", "\n")
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                try:
                    while True:
                        data = os.read(self.fd, 65536)
                        if not data:
                            break
                        self.out += data.decode(errors="replace").replace("\r\n", "\n")
                except OSError:
                    pass
                return os.waitstatus_to_exitcode(st)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise TimeoutError("did not end:\n" + self.out[-3000:])


def gdb_frames(program, where):
    gdb = shutil.which("gdb")
    if not gdb:
        return None
    r = subprocess.run([gdb, "-nx", "-batch", "-ex", f"break {where}", "-ex", "run", "-ex", "bt", program],
                       capture_output=True, text=True, timeout=120)
    return re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?([\w:~<>]+)", r.stdout, re.M)


# Zydis's spellings of conditions against objdump's, and prefixes objdump
# writes as words of their own
CONDS = {"nbe": "a", "nb": "ae", "nae": "b", "nle": "g", "nl": "ge", "nge": "l", "z": "e", "nz": "ne",
         "na": "be", "ng": "le", "c": "b", "nc": "ae", "pe": "p", "po": "np"}
PREFIXES = {"cs", "ds", "es", "ss", "data16", "bnd", "notrack", "lock", "rep", "repz", "repnz", "repe", "repne"}


def mnemonic(words):
    words = [w for w in words if w not in PREFIXES] or words
    m = words[0].lower()
    for head in ("cmov", "set", "j"):
        if m.startswith(head) and m[len(head):] in CONDS:
            return head + CONDS[m[len(head):]]
    return m


def objdump_mnemonics(program, func):
    d = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "intel", program],
                       capture_output=True, text=True).stdout
    body = re.search(rf"<{re.escape(func)}>:\n(.*?)\n\n", d, re.S)
    return [mnemonic(l.split("\t")[1].split()) for l in body.group(1).splitlines() if "\t" in l] if body else []


def main():
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), TERM="dumb")
    native = subprocess.run([prog], capture_output=True, text=True, timeout=60)

    s = Session([reticle, "debug", "--", prog], env)
    s.read_until(r"\(reticle\) $")
    if "stopped before its first instruction" not in s.out:
        fail("no start stop: " + s.out[-500:])
    out = s.cmd("break middle")
    if "Breakpoint 1 at middle" not in out:
        fail("break: " + out)
    stop = s.cmd("run")
    m = re.search(r"Breakpoint 1, thread \d+:\n\s+(0x[0-9a-f]+) _Z6middlei\+0 \(\S+, in its copy\)\s+"
                  r"\(copy at (0x[0-9a-f]+): (\w+)", stop)
    if not m:
        fail("the breakpoint's stop: " + stop)
        return
    orig, copy, first = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
    bt = s.cmd("bt")
    names = re.findall(r"^#\d+\s+0x[0-9a-f]+ (\S+?)\+", bt, re.M)
    want = gdb_frames(prog, "middle")
    mangled = {"middle": "_Z6middlei", "run_all": "_ZL7run_allv"}
    if want is not None:
        want = [mangled.get(w, w) for w in want][:len(names)]
        if names[:4] != want[:4]:
            fail(f"backtrace {names} against gdb's {want}")
        else:
            print(f"bt as gdb's: {names[:4]}")
    elif names[:2] != ["_Z6middlei", "_ZL7run_allv"]:
        fail("backtrace: " + bt)
    regs = s.cmd("registers")
    rip = re.search(r"rip\s+(0x[0-9a-f]+)", regs)
    rsp = re.search(r"rsp\s+(0x[0-9a-f]+)", regs)
    if not rip or int(rip.group(1), 16) != copy or not rsp:
        fail(f"registers: rip {rip and rip.group(1)}, the stop's copy address {copy:#x}:\n{regs}")
    else:
        frame1 = re.search(r"^#1\s+(0x[0-9a-f]+)", bt, re.M)
        word = s.cmd(f"x {rsp.group(1)} 1")
        got = re.search(r": (0x[0-9a-f]+)", word)
        # the program runs with original return addresses (it imports backtrace)
        if not frame1 or not got or int(got.group(1), 16) != int(frame1.group(1), 16) + 1:
            fail(f"x at rsp {word!r} is not frame 1's return address ({frame1 and frame1.group(1)} + 1)")
    si = s.cmd("stepi")
    if not re.search(r"_Z6middlei\+0x[1-9a-f]", si):
        fail("stepi: " + si)
    dis = s.cmd("disas")
    rows = re.findall(r"^(0x[0-9a-f]+): ([^|]*?)\s*\|", dis, re.M)
    want_m = objdump_mnemonics(prog, "_Z6middlei")
    ours = [mnemonic(r[1].split()) for r in rows]
    if not rows or int(rows[0][0], 16) != orig or ours[:len(want_m)] != want_m[:len(ours)] or \
            " | " not in dis:
        fail(f"disas: ours {ours[:12]}, objdump's {want_m[:12]}")
    if ours and ours[0] != mnemonic([first]):
        fail(f"the copy's first instruction {first} is not the original's {ours[0]}")
    info = s.cmd("info breakpoints")
    if not re.search(r"^1\s+middle\s+hits 1,", info, re.M):
        fail("info breakpoints: " + info)
    out = s.cmd("frobnicate")
    if "unknown command 'frobnicate'" not in out:
        fail("an unknown command: " + out)
    s.cmd("delete 1")
    # nexti over a call: the stop is at the instruction after it (objdump's)
    d = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog], capture_output=True, text=True).stdout
    body = re.search(r"<_ZL7run_allv>:\n(.*?)\n\n", d, re.S).group(1).splitlines()
    call_i = next(i for i, l in enumerate(body) if "\tcall" in l)
    after = int(body[call_i + 1].split(":")[0], 16) - int(body[0].split(":")[0], 16)
    s.cmd("break run_all")
    s.cmd("continue")
    outs = [s.cmd("nexti") for _ in range(call_i + 1)]
    back = re.search(r"back from the call:\n\s+0x[0-9a-f]+ _ZL7run_allv\+(0x[0-9a-f]+)", outs[-1])
    if not back or int(back.group(1), 16) != after:
        fail(f"nexti over run_all's call: {outs[-1]!r}, want run_all+{after:#x}")
    else:
        print(f"nexti: over the call, at run_all+{after:#x}")
    s.cmd("delete 2")
    os.write(s.fd, b"continue\n")
    code = s.finish()
    lines = [l for l in s.out.splitlines() if l in set(native.stdout.splitlines())]
    if code != native.returncode or lines != native.stdout.splitlines()[:len(lines)] or \
            len(lines) < len(native.stdout.splitlines()) - 0:
        fail(f"the end: exit {code} (natively {native.returncode}), "
             f"{len(lines)} of {len(native.stdout.splitlines())} output lines in order")
    else:
        print(f"symbols: stop, bt, registers, x, stepi, disas, info, delete, continue: exit {code}")

    # without symbols: by address
    stripped = os.path.join(work, "stripped")
    shutil.copy(prog_nopie, stripped)
    nm = subprocess.run(["nm", prog_nopie], capture_output=True, text=True).stdout
    addr = next(l.split()[0] for l in nm.splitlines() if l.endswith(" _Z6middlei"))
    subprocess.run(["strip", stripped], check=True)
    native = subprocess.run([stripped], capture_output=True, text=True, timeout=60)
    s = Session([reticle, "debug", "-b", f"*0x{addr}", "--", stripped], env)
    s.read_until(r"\(reticle\) $")
    stop = s.cmd("run")
    if not re.search(rf"Breakpoint 1, thread \d+:\n\s+0x0*{addr.lstrip('0')} ", stop):
        fail("a breakpoint by address in a stripped program: " + stop)
    s.cmd("delete 1")
    os.write(s.fd, b"continue\n")
    code = s.finish()
    if code != native.returncode or native.stdout.splitlines()[-1] not in s.out:
        fail(f"stripped: exit {code} (natively {native.returncode})")
    else:
        print(f"stripped: breakpoint at *0x{addr} hit, exit {code}")

    # threads meeting one breakpoint, deleted in the middle
    native = subprocess.run([threads], capture_output=True, text=True, timeout=60)
    s = Session([reticle, "debug", "-b", "work", "--", threads], env)
    s.read_until(r"\(reticle\) $")
    hits = [s.cmd("continue") for _ in range(3)]
    if not all(re.search(r"Breakpoint 1, thread \d+:\n\s+0x[0-9a-f]+ work\+0 ", h) for h in hits):
        fail("threads: the breakpoint's stops: " + "".join(hits)[-1500:])
    s.cmd("delete 1")
    os.write(s.fd, b"continue\n")
    code = s.finish()
    if code != native.returncode or native.stdout.strip() not in s.out:
        fail(f"threads: exit {code} (natively {native.returncode}): {s.out[-600:]}")
    else:
        print(f"threads: 3 stops at work, deleted, exit {code}, output as natively")

    # attached to a running process, then detached
    lp = subprocess.Popen([loop], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        s = Session([reticle, "debug", "-p", str(lp.pid)], env)
        s.read_until(r"\(reticle\) $")
        s.cmd("break work")
        stop = s.cmd("continue")
        bt = s.cmd("bt")
        os.write(s.fd, b"quit\n")
        code = s.finish()
        time.sleep(0.2)
        with open(f"/proc/{lp.pid}/maps") as f:
            left = [l for l in f if "memfd:reticle" in l]
        if "attached" not in s.out or not re.search(r"work\+0 ", stop) or \
                not re.search(r"^#\d+\s+0x[0-9a-f]+ main\+", bt, re.M) or code != 0 or \
                lp.poll() is not None or left:
            fail(f"-p: exit {code}, running {lp.poll() is None}, reticle's mappings left {len(left)}: "
                 f"{s.out[-1200:]}")
        else:
            print("-p: attached, stopped at work, bt through main, detached, running on, no mapping left")
    finally:
        lp.kill()
        lp.wait()

    # a fault in a measured run
    native = subprocess.run([crash, "segv"], capture_output=True, text=True)
    s = Session([reticle, "run", "--debug-on-fault", "-o", os.path.join(work, "c.db"), "--", crash, "segv"], env)
    stop = s.read_until(r"\(reticle\) $")
    if "got Segmentation fault" not in stop:
        fail("--debug-on-fault: no stop at the SIGSEGV: " + stop[-800:])
    bt = s.cmd("bt")
    if not re.search(r"^#\d+\s+0x[0-9a-f]+ main\+", bt, re.M):
        fail("--debug-on-fault: backtrace without main: " + bt)
    os.write(s.fd, b"continue\n")
    code = s.finish()
    if code != 128 + signal.SIGSEGV or native.returncode != -signal.SIGSEGV:
        fail(f"--debug-on-fault: exit {code}, natively {native.returncode}")
    else:
        print(f"--debug-on-fault: stopped at the SIGSEGV, bt through main, exit {code}")


try:
    main()
except (TimeoutError, EOFError) as e:
    fail(str(e))
print(f"debug: {fails} failures")
sys.exit(1 if fails else 0)
