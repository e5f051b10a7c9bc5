"""callgrind's self Ir per function of a program, in the parts that
--dump-before=F cuts its run into (tests/run/span.py,
tests/e2e/until_call_oracle.py)."""
import os, re, subprocess


def callgrind_parts(prog, args, work, before, keep=None):
    """[{function: Ir}] of PROG's own functions (those in KEEP when given),
    one per part: before BEFORE[0]'s first call, ..., after the last."""
    out = os.path.join(work, "cg.out")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] +
                   [f"--dump-before={f}" for f in before] + [prog] + args,
                   capture_output=True, check=True, timeout=300)
    parts = []
    for f in [f"{out}.{i + 1}" for i in range(len(before))] + [out]:
        a = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", f],
                           capture_output=True, text=True, check=True).stdout
        ir = {}
        for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+[^:\s]+:(\S+) \[([^\]]+)\]", a, re.M):
            if os.path.realpath(m.group(3)) == os.path.realpath(prog) and (keep is None or m.group(2) in keep):
                ir[m.group(2)] = ir.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
        parts.append(ir)
    return parts
