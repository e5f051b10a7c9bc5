# Workloads shared by the bench scripts: each sets up its input in $BENCH_DIR
# and defines CMD_<name> (an array) and STDIN_<name> (a file or /dev/null).
BENCH_DIR=${BENCH_DIR:-/tmp/reticle-bench}
# python3's string hashes from a fixed seed: its runs repeat (a bbv run's
# intervals are the ones a later sampled memtrace run meets)
export PYTHONHASHSEED=0
mkdir -p "$BENCH_DIR"

setup_workloads() {
	if [ ! -s "$BENCH_DIR/text16m" ]; then
		# 16 MiB of compressible text, the same every time
		python3 -c "
import random
r = random.Random(1)
words = [''.join(r.choice('etaoinshrdlucmfwypvbgkjqxz') for _ in range(r.randint(2, 9))) for _ in range(5000)]
out, n = [], 0
while n < 16 << 20:
    line = ' '.join(r.choice(words) for _ in range(12)) + '\n'
    out.append(line); n += len(line)
open('$BENCH_DIR/text16m', 'w').write(''.join(out))
"
	fi
	cat > "$BENCH_DIR/sqlite.sql" <<'SQL'
create table t(a integer primary key, b text, c real);
with recursive x(i) as (select 1 union all select i+1 from x where i<1000000)
  insert into t select i, hex(i*2654435761 % 4294967296), i*1.5 from x;
create index tb on t(b);
select count(*), sum(c) from t where a % 7 = 3;
select count(*) from t where b like 'A%';
select b, count(*) from t group by substr(b, 1, 2) order by 2 desc limit 3;
SQL
	cat > "$BENCH_DIR/bench.lua" <<'LUA'
local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
local t = {} for i = 1, 600000 do t[i] = (i * 7919) % 100003 end
table.sort(t)
local s = {} for i = 1, 200000 do s[#s+1] = tostring(i) .. "x" end
print(fib(36), t[1000], #table.concat(s))
LUA
	cat > "$BENCH_DIR/bench.py" <<'PY'
d = {}
for i in range(2000000):
    d[str(i)] = i * 3
def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)
print(sum(d.values()), fib(30), len(sorted(d)))
PY
}

WORKLOADS=${WORKLOADS:-"bzip2 sqlite3 lua5.4 python3"}
CMD_bzip2=(/usr/bin/bzip2 -c "$BENCH_DIR/text16m");      STDIN_bzip2=/dev/null
CMD_sqlite3=(/usr/bin/sqlite3 :memory:);                  STDIN_sqlite3="$BENCH_DIR/sqlite.sql"
CMD_lua5_4=(/usr/bin/lua5.4 "$BENCH_DIR/bench.lua");      STDIN_lua5_4=/dev/null
CMD_python3=(/usr/bin/python3.11 "$BENCH_DIR/bench.py"); STDIN_python3=/dev/null
