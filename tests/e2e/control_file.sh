#!/bin/sh
# reticle run -f FILE (control files): the same run through a control file
# and through options gives the same profile (every function's calls and
# instructions); options given with -f override the file; bad files (an
# unknown key, a value of the wrong type, a syntax error, a file that does
# not exist, one that tries to run a command) are refused with the file
# and line, status 2, and nothing run.
# The run's context (modules, functions, from, to) likewise, on
# tests/run/programs/span.c (SPAN).
# usage: control_file.sh RETICLE PROGRAM WORKDIR SPAN
R=$1 P=$2 W=$3 S=$4
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export RETICLE_CACHE_DIR="$W/cache"
fail=0
rows() { sqlite3 "$1" "SELECT m.path, f.addr, f.name, f.calls, f.instrs FROM functions f
                       JOIN modules m ON m.id = f.module WHERE f.calls > 0 OR f.instrs > 0 ORDER BY 1, 2"; }

cat >run.lua <<EOT
-- the same run as the options below
application = "$P"
arguments = { 3000 }
collect = { "fcount", "bbcount" }
output = "file.db"
EOT
# without address randomization: the loader's strcmp counts vary with where the
# stack lands
setarch -R "$R" run -f run.lua >file.out 2>file.err || { echo "FAIL: run -f: $(cat file.err)"; fail=1; }
setarch -R "$R" run -c fcount,bbcount -o opts.db -- "$P" 3000 >opts.out 2>opts.err || { echo "FAIL: run with options"; fail=1; }
cmp -s file.out opts.out || { echo "FAIL: the program's output differs"; fail=1; }
rows file.db >file.rows; rows opts.db >opts.rows
[ -s file.rows ] && cmp -s file.rows opts.rows ||
	{ echo "FAIL: the profiles differ: $(diff file.rows opts.rows | head -5)"; fail=1; }
echo "$(wc -l <file.rows) functions alike"

# the run's context the same way: modules, functions, from, to
cat >ctx.lua <<EOT
application = "$S"
arguments = { "phases" }
collect = { "fcount", "bbcount" }
output = "ctxfile.db"
modules = { "rp_span*" }
functions = { "phase_*", "work" }
from = "call:parse"
to = "call:emit"
EOT
"$R" run -f ctx.lua >/dev/null 2>ctx.err || { echo "FAIL: run -f ctx.lua: $(cat ctx.err)"; fail=1; }
"$R" run -c fcount,bbcount -o ctxopts.db --modules 'rp_span*' --functions 'phase_*,work' \
	--from call:parse --to call:emit -- "$S" phases >/dev/null 2>ctx.err ||
	{ echo "FAIL: the context's options: $(cat ctx.err)"; fail=1; }
rows ctxfile.db >ctxfile.rows; rows ctxopts.db >ctxopts.rows
[ -s ctxfile.rows ] && cmp -s ctxfile.rows ctxopts.rows ||
	{ echo "FAIL: the context's profiles differ: $(diff ctxfile.rows ctxopts.rows | head -5)"; fail=1; }
# between parse and emit: phase_b and its work() calls only
names=$(cut -d'|' -f3 ctxfile.rows | sort | tr '\n' ' ')
[ "$names" = "phase_b work " ] || { echo "FAIL: the context's functions: $names"; fail=1; }

# the command line wins: -o, -c, and a program after --
"$R" run -f run.lua -o over.db -c fcount -- "$P" 10 >over.out 2>&1 || { echo "FAIL: overridden run"; fail=1; }
[ -f over.db ] || { echo "FAIL: -o did not override output"; fail=1; }
grep -q "below 10:" over.out || { echo "FAIL: the program after -- did not override: $(head -2 over.out)"; fail=1; }
n=$(sqlite3 over.db "SELECT count(*) FROM functions WHERE instrs > 0")
[ "$n" = 0 ] || { echo "FAIL: -c did not override collect ($n functions with Ir)"; fail=1; }

bad() {   # LABEL EXPECTED_MESSAGE_PART, the file's text on stdin
	cat >bad.lua
	rm -f bad.db
	"$R" run -f bad.lua >bad.out 2>bad.err; rc=$?
	[ $rc -eq 2 ] || { echo "FAIL [$1]: status $rc"; fail=1; }
	grep -q -- "$2" bad.err || { echo "FAIL [$1]: message '$(cat bad.err)' lacks '$2'"; fail=1; }
	[ "$(wc -l <bad.err)" -eq 1 ] || { echo "FAIL [$1]: more than one line: $(cat bad.err)"; fail=1; }
	[ ! -f bad.db ] && [ ! -s bad.out ] || { echo "FAIL [$1]: the program ran"; fail=1; }
}
printf 'application = "%s"\noutput = "bad.db"\ncolect = {"fcount"}\n' "$P" | bad "unknown key" "bad.lua:3: unknown key 'colect'"
printf 'application = "%s"\noutput = "bad.db"\ncollect = 5\n' "$P" | bad "wrong type" "bad.lua:3: collect: a string or a list"
printf 'application = "%s"\narguments = { {} }\n' "$P" | bad "nested table" "bad.lua:2: arguments"
printf 'application = "%s"\ncollect = {\n' "$P" | bad "syntax" "bad.lua:3:"
printf 'application = "%s"\nfrom = "later"\n' "$P" | bad "bad edge" "bad span edge"
printf 'os.execute("touch ran")\napplication = "%s"\n' "$P" | bad "no commands" "bad.lua:1:"
[ ! -f ran ] || { echo "FAIL: the control file ran a command"; fail=1; }
rm -f bad.lua; "$R" run -f bad.lua >/dev/null 2>bad.err; rc=$?
[ $rc -eq 2 ] && grep -q "cannot open bad.lua" bad.err || { echo "FAIL [missing]: $rc $(cat bad.err)"; fail=1; }
printf 'collect = "fcount"\n' >noapp.lua; "$R" run -f noapp.lua >/dev/null 2>bad.err; rc=$?
[ $rc -eq 2 ] && grep -q "no program given" bad.err || { echo "FAIL [no application]: $rc $(cat bad.err)"; fail=1; }
[ $fail -eq 0 ] && echo ok
exit $fail
