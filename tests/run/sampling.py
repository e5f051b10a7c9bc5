"""Whether this machine lets reticle sample (perf_event_open): a container
or a kernel.perf_event_paranoid of 3 may not. Tests of the sample
collector skip (77) where it cannot, saying why, rather than fail."""
import os, subprocess, tempfile


def unavailable(reticle):
    """None when `reticle run -c sample` works here, else reticle's reason."""
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([reticle, "run", "-c", "sample", "-o", os.path.join(d, "p.db"), "--", "true"],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, RETICLE_CACHE_DIR=os.path.join(d, "cache")))
    if r.returncode == 0:
        return None
    why = r.stderr.strip().splitlines()
    return why[0] if why else f"exit {r.returncode}"


def require(reticle):
    """Exits 77 (ctest's skip), saying why, where reticle cannot sample."""
    why = unavailable(reticle)
    if why:
        print(f"SKIP: this machine does not let reticle sample: {why}")
        raise SystemExit(77)
