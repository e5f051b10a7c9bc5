"""What the Python run tests share: a fresh work directory and reticle's
environment for it (its own warm cache, and ENV), FAIL lines, and the exit
status they add up to."""
import os, shutil, sys


class Checks:
    def __init__(self, work, **env):
        self.work, self.fails = work, 0
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        self.env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"), **env)

    def fail(self, msg):
        self.fails += 1
        print("FAIL " + msg, flush=True)

    def done(self):
        print(f"{self.fails} failure(s)")
        sys.exit(1 if self.fails else 0)
