#!/usr/bin/env python3
"""A file replaced under its path during a run, and two files of one build-id.

usage: replaced_file.py RETICLE WORKDIR

Checked, each against the native run's output and exit status, cold and
warm (one cache for the whole test):
- a library copied over ./lib.so and dlopen'ed again after a dlclose runs
  its own code (reticle once kept the first file's analysis for the path:
  the second library ran the first's copy, then died at dlclose);
- a configure-style script that builds ./conftest, runs it, builds another
  ./conftest and runs that (the second exec died of SIGSEGV);
- two different programs linked with the same build-id by hand, one run
  after the other with one cache (the second took the first's function
  boundaries from the cache and died).
Exits 0 when all agree."""
import os, shutil, subprocess, sys

LIB_A = "int lib_g(int x) { int s = 0; for (int i = 0; i < 3; i++) s += x + i; return s; }\n"
LIB_B = ("static int pad[101];\n"
         "int lib_g(int x) { int s = 0; for (int i = 0; i < 4; i++) s += 2 * x + i;"
         " return s + (int)sizeof pad + pad[x]; }\n")
MAIN = r"""#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	for (int v = 1; v < argc; v++) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, "cp %s lib.tmp && mv lib.tmp lib.so", argv[v]);
		if (system(cmd))
			return 1;
		void *h = dlopen("./lib.so", RTLD_NOW);
		if (!h)
			return 2;
		int (*g)(int) = (int (*)(int))dlsym(h, "lib_g");
		printf("%s g=%d\n", argv[v], g(7));
		fflush(stdout);
		dlclose(h);
	}
	return 0;
}
"""
CONFTEST = """#!/bin/sh
printf 'int main(void) { return 3; }\\n' > c1.c
printf '#include <stdio.h>\\nint main(void) { puts("second program"); return 5; }\\n' > c2.c
rm -f conftest
cc -O0 c1.c -o conftest; ./conftest; echo "first $?"
cc -O0 c2.c -o conftest; ./conftest; echo "second $?"
"""
ONE = "#include <stdio.h>\nint main(void) { puts(\"one\"); return 0; }\n"
TWO = ("#include <stdio.h>\n#include <string.h>\n"
       "static int work(const char *s) { return (int)strlen(s) * 3; }\n"
       "int main(int argc, char **argv) { printf(\"two %d\\n\", work(argv[0])); return 5; }\n")


def sh(cmd, cwd):
    subprocess.run(cmd, shell=True, cwd=cwd, check=True)


def main():
    reticle, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name, text in (("a.c", LIB_A), ("b.c", LIB_B), ("main.c", MAIN), ("conftest.sh", CONFTEST),
                       ("one.c", ONE), ("two.c", TWO)):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    os.chmod(os.path.join(work, "conftest.sh"), 0o755)
    sh("cc -O0 -shared -fPIC a.c -o liba.so && cc -O1 -shared -fPIC b.c -o libb.so && "
       "cc -O2 main.c -o main -ldl && "
       "cc -O2 one.c -o one -Wl,--build-id=0x1234567890abcdef && "
       "cc -O0 two.c -o two -Wl,--build-id=0x1234567890abcdef", work)
    env = dict(os.environ, RETICLE_CACHE_DIR=os.path.join(work, "cache"))
    cases = [["./main", "liba.so", "libb.so", "liba.so"], ["./conftest.sh"], ["./one"], ["./two", "x"]]
    failures = 0
    for run in ("cold", "warm"):
        for prog in cases:
            native = subprocess.run(prog, cwd=work, capture_output=True, text=True, timeout=120)
            r = subprocess.run([reticle, "run", "-o", os.path.join(work, "p.db"), "--"] + prog, cwd=work,
                               capture_output=True, text=True, timeout=300, env=env)
            if r.stdout != native.stdout or r.returncode != native.returncode:
                print(f"FAIL {run} {' '.join(prog)}: status {r.returncode} (natively {native.returncode})\n"
                      f"output {r.stdout!r}\nnatively {native.stdout!r}\n{r.stderr}")
                failures += 1
            else:
                print(f"ok {run} {' '.join(prog)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
