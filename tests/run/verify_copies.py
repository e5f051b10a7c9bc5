"""Warm runs place the copies that the run before them saved, cold runs those
that a helper thread made ahead from the binaries. With
RETICLE_VERIFY_COPIES=1, reticle also emits each of them afresh and says when
the two differ (a field of a copy that was not rewritten for where things
are now). The tests that run a program cold then warm use this."""
import re

ENV = {"RETICLE_VERIFY_COPIES": "1"}


def problem(stderr, warm=True, collectors=""):
    """What is wrong with a verified run (its --stats stderr), or None. A
    warm run that relocated functions from its list must have placed saved
    copies, but with memtrace, whose copies are made for the run only
    (their accesses are numbered as they are emitted)."""
    bad = [l for l in stderr.splitlines() if "differ" in l]
    if bad:
        return bad[0]
    if not warm or "memtrace" in collectors.split(","):
        return None
    listed = re.search(r"\((\d+) from the warm-start list\)", stderr)
    placed = re.search(r"(\d+) saved copies placed", stderr)
    if listed and int(listed.group(1)) > 0 and not (placed and int(placed.group(1)) > 0):
        return "functions came from the warm-start list, but no saved copy was placed"
    return None
