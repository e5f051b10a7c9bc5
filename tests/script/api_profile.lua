-- profile.h, report.h and error.h from Lua (src/script/lua_profile.c):
-- a profile written row by row with known counts, read back with every
-- foreach and checked by hand and with the sqlite3 shell; a merge of it;
-- reports against `reticle report`, `reticle diff` and `reticle annotate`
-- on the same files, and on runs of a small program (counts by hand, nm);
-- errors (messages that name the entry) and the log.
local ctx = ...
local R = ctx.build .. "/src/reticle"
local dir = ctx.work .. "/profile"
assert(os.execute("rm -rf " .. dir .. " && mkdir -p " .. dir))

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- The output of a shell command that must succeed.
local function sh(cmd)
  local f = assert(io.popen(cmd))
  local out = f:read("a")
  local ok, _, code = f:close()
  assert(ok, cmd .. ": exit " .. tostring(code))
  return out
end

local function sql(db, query)
  return sh("sqlite3 -batch -noheader -separator '|' " .. quote(db) .. " " .. quote(query))
end

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local function eq(got, want, what)
  if got ~= want then
    local function short(v) v = tostring(v); return #v > 400 and v:sub(1, 400) .. "..." or v end
    error(string.format("%s: got %s, want %s", what, short(got), short(want)), 2)
  end
end

-- FN(...) raises an error whose message has every string of WANT.
local function fails(want, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "no error, wanted " .. table.concat(want, ", "))
  for _, w in ipairs(want) do
    assert(tostring(err):find(w, 1, true), string.format("error %q lacks %q", tostring(err), w))
  end
end

-- Every row a foreach gives, as "a|b|c" lines of FIELDS (sqlite3's form).
local function rows(fields, foreach, ...)
  local out = {}
  local args = table.pack(...)
  args[args.n + 1] = function(row)
    local t = {}
    for i, k in ipairs(fields) do
      local v = row[k]
      if math.type(v) == "float" and v == math.floor(v) then v = string.format("%.1f", v) end
      t[i] = v == nil and "" or tostring(v)
    end
    out[#out + 1] = table.concat(t, "|") .. "\n"
  end
  eq(foreach(table.unpack(args, 1, args.n + 1)), nil, "a foreach that visited every row")
  return table.concat(out)
end

---------------------------------------------------------------- error.h
local _, enoent = io.open(dir .. "/none")
eq(enoent, dir .. "/none: " .. reticle.strerror(-2), "strerror(-ENOENT) against io.open's message")
-- the command line's message for a file that is not a profile
local cli_err = sh(R .. " report /etc/hostname 2>&1 || true")
assert(cli_err:find(reticle.strerror(-reticle.ERR_NOT_PROFILE), 1, true), "strerror(-ERR_NOT_PROFILE): " .. cli_err)
assert(reticle.strerror(-reticle.ERR_BAD_OPTION) ~= reticle.strerror(-reticle.ERR_NOT_PROFILE), "distinct messages")

---------------------------------------------------------------- writing
local made = dir .. "/made.db"
local p = reticle.profile_create(made)
reticle.profile_set_meta(p, "command", "./a x")
p:set_meta("collectors", "fcount,bbcount")
fails({ "profile_set_meta" }, reticle.profile_set_meta, p, "schema_version", "7")
reticle.profile_add_process(p, { id = 1, parent = 0, pid = 4242, kind = "launch", command = "./a x",
                                 exit_status = 0, start_ns = 0, end_ns = 9000 })
reticle.profile_add_process(p, { id = 2, parent = 1, pid = 4243, kind = "fork", command = "./a y",
                                 exit_status = reticle.PROCESS_RUNNING, start_ns = 100, end_ns = 5000 })
local m1 = reticle.profile_add_module(p, "/opt/a", 0x555500000000)
local m2 = reticle.profile_add_process_module(p, 2, "/opt/a", 0x555600000000)
local lib = reticle.profile_add_module(p, "/opt/libb.so", 0x7f0000001000)
local main = reticle.profile_add_function(p, m1, "main", 0x1100, 0x40, 1)
local helper = reticle.profile_add_function(p, m1, "helper", 0x1200, 0x20, true)
local tiny = reticle.profile_add_function(p, lib, "tiny", 0x500, 4, 0, "too short")
local main2 = reticle.profile_add_function(p, m2, "main", 0x1100, 0x40, 1)
local both = reticle.HAVE_CALLS | reticle.HAVE_INSTRS
reticle.profile_set_function_counts(p, main, both, 1, 100)
reticle.profile_set_function_counts(p, helper, reticle.HAVE_CALLS, 5, 777)   -- 777 not kept
reticle.profile_set_function_counts(p, helper, reticle.HAVE_INSTRS, 999, 50) -- calls 5 kept
reticle.profile_set_function_counts(p, main2, both, 2, 30)
reticle.profile_add_block(p, main, 0x1100, 4, 1)
-- the same block again keeps the larger count (docs/profile-schema.md: bbcount
-- and cover both write it; profile.h's comment says the counts add up)
reticle.profile_add_block(p, main, 0x1110, 3, 8)
reticle.profile_add_block(p, main, 0x1110, 3, 32)
reticle.profile_add_block(p, main, 0x1110, 3, 5)
reticle.profile_add_block(p, helper, 0x1200, 10, 5)
reticle.profile_add_block(p, main2, 0x1100, 4, 2)
reticle.profile_add_call(p, main, 0x1120, helper, 3)
reticle.profile_add_call(p, main, 0x1120, helper, 5)        -- keeps the larger: 5
reticle.profile_add_call(p, main, 0x1120, helper, 2)
reticle.profile_add_branch(p, main, 0x1118, 30, 2)
reticle.profile_add_branch(p, main, 0x1118, 10, 0)          -- adds: 40, 2
reticle.profile_add_time(p, main, 4242, 1, 0.5, 0.25)
reticle.profile_add_time(p, helper, 4242, 5, 0.25, 0.25)
reticle.profile_add_context(p, { id = 1, parent = 0, ["function"] = main, tid = 4242, calls = 1,
                                 inclusive = 0.5, exclusive = 0.25 })
for _ = 1, 2 do   -- adds: 4 calls, 0.25 s
  reticle.profile_add_context(p, { id = 2, parent = 1, ["function"] = helper, tid = 4242, calls = 2,
                                   inclusive = 0.125, exclusive = 0.125 })
end
reticle.profile_add_sample(p, { id = 1, parent = 0, ["function"] = main, tid = 4242, samples = 3, weight = 3e6 })
for _ = 1, 2 do   -- adds: 2 samples, 2e6
  reticle.profile_add_sample(p, { id = 2, parent = 1, ["function"] = helper, tid = 4242, samples = 1, weight = 1e6 })
end
reticle.profile_add_signal_run(p, { process = 1, tid = 4242, value = 7, start_ns = 10, end_ns = 20 })
reticle.profile_add_signal_run(p, { process = 2, tid = 4243, value = 8, start_ns = 30, end_ns = 60 })
reticle.profile_add_metric(p, main, "cycles", 0x1100, 1.5)
reticle.profile_add_metric(p, main, "cycles", 0x1100, 1.5)  -- adds: 3
reticle.profile_add_metric(p, helper, "cycles", 0x1200, 4)
-- ids of no row; arguments of the wrong type
fails({ "profile_add_block", reticle.strerror(-2) }, reticle.profile_add_block, p, 99999, 0x1100, 1, 1)
fails({ "profile_add_function" }, reticle.profile_add_function, p, 99999, "f", 0, 1, 1)
fails({ "bad argument" }, reticle.profile_add_call, p, main, "site", helper, 1)
fails({ "bad argument", "range" }, reticle.profile_add_block, p, main, 0x1100, 1 << 40, 1)
fails({ "field 'pid'" }, reticle.profile_add_process, p, { id = 3, pid = "x" })
reticle.profile_commit(p)
reticle.profile_close(p)
reticle.profile_close(p)   -- twice: harmless
fails({ "closed" }, reticle.profile_get_meta, p, "command")
fails({ "profile_create", dir .. "/no/such/dir" }, reticle.profile_create, dir .. "/no/such/dir/x.db")

---------------------------------------------------------------- the file, read with sqlite3
eq(sql(made, "SELECT key, value FROM meta WHERE key IN ('command', 'collectors') ORDER BY key"),
   "collectors|fcount,bbcount\ncommand|./a x\n", "meta in the file")
eq(sql(made, "SELECT id, ifnull(parent, 0), pid, kind, command, exit_status, start_ns, end_ns FROM processes ORDER BY id"),
   "1|0|4242|launch|./a x|0|0|9000\n2|1|4243|fork|./a y|-2|100|5000\n", "processes in the file")
eq(sql(made, "SELECT id, path, load_bias, process FROM modules ORDER BY id"),
   string.format("%d|/opt/a|%d|1\n%d|/opt/a|%d|2\n%d|/opt/libb.so|%d|1\n", m1, 0x555500000000, m2, 0x555600000000,
                 lib, 0x7f0000001000), "modules in the file")
eq(sql(made, "SELECT id, module, name, addr, size, instrumented, ifnull(reason, ''), have, ifnull(calls, ''),"
             .. " ifnull(instrs, '') FROM functions ORDER BY id"),
   string.format("%d|%d|main|4352|64|1||3|1|100\n%d|%d|helper|4608|32|1||3|5|50\n%d|%d|tiny|1280|4|0|too short|0||\n"
                 .. "%d|%d|main|4352|64|1||3|2|30\n", main, m1, helper, m1, tiny, lib, main2, m2), "functions in the file")
eq(sql(made, "SELECT function, addr, ninstrs, count FROM blocks ORDER BY function, addr"),
   string.format("%d|4352|4|1\n%d|4368|3|32\n%d|4608|10|5\n%d|4352|4|2\n", main, main, helper, main2), "blocks in the file")
eq(sql(made, "SELECT caller, site, callee, count FROM call_sites"), string.format("%d|4384|%d|5\n", main, helper),
   "call sites in the file")
eq(sql(made, "SELECT function, site, taken, not_taken FROM branches"), string.format("%d|4376|40|2\n", main),
   "branches in the file")
eq(sql(made, "SELECT function, tid, calls, inclusive, exclusive FROM function_times ORDER BY function"),
   string.format("%d|4242|1|0.5|0.25\n%d|4242|5|0.25|0.25\n", main, helper), "times in the file")
eq(sql(made, "SELECT id, parent, function, tid, calls, inclusive, exclusive FROM contexts ORDER BY id"),
   string.format("1|0|%d|4242|1|0.5|0.25\n2|1|%d|4242|4|0.25|0.25\n", main, helper), "contexts in the file")
eq(sql(made, "SELECT id, parent, function, tid, samples, weight FROM samples ORDER BY id"),
   string.format("1|0|%d|4242|3|3000000.0\n2|1|%d|4242|2|2000000.0\n", main, helper), "samples in the file")
eq(sql(made, "SELECT process, tid, value, start_ns, end_ns FROM signal_runs ORDER BY process"),
   "1|4242|7|10|20\n2|4243|8|30|60\n", "signal runs in the file")
eq(sql(made, "SELECT function, name, site, value FROM metrics ORDER BY function"),
   string.format("%d|cycles|4352|3.0\n%d|cycles|4608|4.0\n", main, helper), "metrics in the file")

---------------------------------------------------------------- reading it back
local q = reticle.profile_open(made)
eq(reticle.profile_get_meta(q, "command"), "./a x", "get_meta")
eq(reticle.profile_get_meta(q, "nothing"), nil, "get_meta of no key")
eq(rows({ 1, 2 }, function(pr, fn) return reticle.profile_foreach_meta(pr, function(k, v) fn({ k, v }) end) end, q),
   sql(made, "SELECT key, value FROM meta ORDER BY key"), "foreach_meta")
eq(reticle.profile_selected_process(q), 0, "selected_process of a profile just opened")
-- image 1 sums main and helper, image 2 its main
eq(rows({ "id", "parent", "pid", "kind", "command", "exit_status", "start_ns", "end_ns", "calls", "instrs" },
        reticle.profile_foreach_process, q),
   "1|0|4242|launch|./a x|0|0|9000|6|150\n2|1|4243|fork|./a y|-2|100|5000|2|30\n", "foreach_process")
local fields = { "id", "module", "name", "addr", "size", "have", "calls", "instrs", "instrumented", "module_id", "reason" }
-- all images merged: main of /opt/a at 0x1100 is one row (1 + 2 calls, 100 + 30 Ir), the lowest id; by Ir
local fmain = string.format("%d|/opt/a|main|4352|64|3|3|130|1|%d|\n", main, m1)
local fhelper = string.format("%d|/opt/a|helper|4608|32|3|5|50|1|%d|\n", helper, m1)
local ftiny = string.format("%d|/opt/libb.so|tiny|1280|4|0|0|0|0|%d|too short\n", tiny, lib)
eq(rows(fields, reticle.profile_foreach_function, q, 1), fmain .. fhelper .. ftiny, "foreach_function(all)")
eq(rows(fields, reticle.profile_foreach_function, q, false), fmain .. fhelper, "foreach_function(counted)")
eq(rows(fields, reticle.profile_foreach_function_by_addr, q, true), fmain .. fhelper .. ftiny, "foreach_function_by_addr")
local visited = 0
local found = reticle.profile_foreach_function(q, 1, function(f)
  visited = visited + 1
  if f.name == "helper" then return f end
end)
eq(found.calls .. " " .. visited, "5 2", "a foreach stopped by its function returns its value")
fails({ "boom" }, reticle.profile_foreach_function, q, 1, function() error("boom") end)
fails({ "profile_close" }, reticle.profile_foreach_module, q, function() reticle.profile_close(q) end)
eq(rows({ "id", "path", "load_bias", "process" }, reticle.profile_foreach_module, q),
   string.format("%d|/opt/a|%d|0\n%d|/opt/libb.so|%d|0\n", m1, 0x555500000000, lib, 0x7f0000001000),
   "foreach_module (merged: one /opt/a, process 0)")
local bfields = { "function", "addr", "ninstrs", "count" }
eq(rows(bfields, reticle.profile_foreach_block, q, main),
   string.format("%d|4352|4|3\n%d|4368|3|32\n", main, main), "foreach_block(main), images added")
eq(rows(bfields, reticle.profile_foreach_block, q, -1),
   string.format("%d|4352|4|3\n%d|4368|3|32\n%d|4608|10|5\n", main, main, helper), "foreach_block(all)")
eq(rows({ "caller", "site", "callee", "count" }, reticle.profile_foreach_call, q),
   sql(made, "SELECT caller, site, callee, count FROM call_sites"), "foreach_call")
eq(rows({ "function", "site", "taken", "not_taken" }, reticle.profile_foreach_branch, q),
   sql(made, "SELECT function, site, taken, not_taken FROM branches"), "foreach_branch")
eq(rows({ "function", "tid", "calls", "inclusive", "exclusive" }, reticle.profile_foreach_time, q),
   sql(made, "SELECT function, tid, calls, inclusive, exclusive FROM function_times ORDER BY function, tid"),
   "foreach_time")
eq(rows({ "id", "parent", "function", "tid", "calls", "inclusive", "exclusive" }, reticle.profile_foreach_context, q),
   sql(made, "SELECT id, parent, function, tid, calls, inclusive, exclusive FROM contexts ORDER BY id"),
   "foreach_context")
eq(rows({ "id", "parent", "function", "tid", "samples", "weight" }, reticle.profile_foreach_sample, q),
   sql(made, "SELECT id, parent, function, tid, samples, weight FROM samples ORDER BY id"), "foreach_sample")
eq(rows({ "process", "tid", "value", "start_ns", "end_ns" }, reticle.profile_foreach_signal_run, q),
   sql(made, "SELECT process, tid, value, start_ns, end_ns FROM signal_runs ORDER BY process, tid, start_ns"),
   "foreach_signal_run")
eq(rows({ "function", "name", "site", "value" }, reticle.profile_foreach_metric, q),
   string.format("%d|cycles|4352|3.0\n%d|cycles|4608|4.0\n", main, helper), "foreach_metric")
eq(rows({ "module" }, reticle.profile_foreach_rank_count, q), "", "foreach_rank_count of a profile without ranks")
local totals_fields = { "have", "calls", "instrs", "functions", "counted", "uninstrumented", "modules", "blocks",
                        "call_sites", "processes" }
eq(rows(totals_fields, function(pr, fn) fn(reticle.profile_get_totals(pr)) end, q), "3|8|180|3|2|1|2|3|1|2\n",
   "get_totals (merged)")
eq(reticle.profile_sample_unit(q), 1e-9, "sample_unit without sample_event: ns")
-- one image
reticle.profile_select_process(q, 2)
eq(reticle.profile_selected_process(q), 2, "selected_process")
eq(rows(fields, q.foreach_function, q, 1), string.format("%d|/opt/a|main|4352|64|3|2|30|1|%d|\n", main2, m2),
   "foreach_function of image 2")
eq(rows({ "id", "path", "load_bias", "process" }, reticle.profile_foreach_module, q),
   string.format("%d|/opt/a|%d|2\n", m2, 0x555600000000), "foreach_module of image 2")
eq(rows(totals_fields, function(pr, fn) fn(reticle.profile_get_totals(pr)) end, q), "3|2|30|1|1|0|1|1|0|1\n",
   "get_totals of image 2")
eq(rows({ "process", "tid", "value" }, reticle.profile_foreach_signal_run, q), "2|4243|8\n",
   "foreach_signal_run of image 2")
fails({ "profile_select_process" }, reticle.profile_select_process, q, 99)
q:select_process(0)
eq(q:selected_process(), 0, "selected_process after selecting all")

-- sample_unit of events that are counts
local ev = dir .. "/events.db"
local e = reticle.profile_create(ev)
reticle.profile_set_meta(e, "sample_event", "page-faults")
reticle.profile_commit(e)
e:close()
e = reticle.profile_open(ev)
eq(reticle.profile_sample_unit(e), 1, "sample_unit of page-faults")
e:close()

---------------------------------------------------------------- merge
local merged = dir .. "/merged.db"
local seen = {}
eq(reticle.profile_merge(merged, { made, made }, function(i) seen[#seen + 1] = i end), nil, "profile_merge")
eq(table.concat(seen, ","), "1,2", "merge progress")
eq(sql(merged, "SELECT value FROM meta WHERE key = 'merged_profiles'"), "2\n", "merged_profiles")
local mp = reticle.profile_open(merged)
-- per rank (the inputs' index): each rank's images added, by module, address, rank
local want_ranks = ""
for _, row in ipairs({ { "/opt/a", "main", 4352, 3, 3, 130 }, { "/opt/a", "helper", 4608, 3, 5, 50 },
                       { "/opt/libb.so", "tiny", 1280, 0, 0, 0 } }) do
  for rank = 0, 1 do
    want_ranks = want_ranks .. string.format("%s|%s|%d|%d|%d|%d|%d\n", row[1], row[2], row[3], rank, row[4], row[5],
                                             row[6])
  end
end
eq(rows({ "module", "name", "addr", "rank", "have", "calls", "instrs" }, reticle.profile_foreach_rank_count, mp),
   want_ranks, "foreach_rank_count")
eq(sql(merged, "SELECT p.rank, sum(f.calls), sum(f.instrs) FROM functions f JOIN modules m ON m.id = f.module"
               .. " JOIN processes p ON p.id = m.process GROUP BY p.rank ORDER BY p.rank"),
   "0|8|180\n1|8|180\n", "ranks in the merged file")
mp:close()
local stopped = dir .. "/stopped.db"
eq(reticle.profile_merge(stopped, { made, made }, function() return "halt" end), "halt", "a merge stopped")
eq(io.open(stopped), nil, "a stopped merge writes nothing")
fails({ "profile_merge", reticle.strerror(-2) }, reticle.profile_merge, stopped, { dir .. "/none.db" })

---------------------------------------------------------------- reports of the made profile
-- against the command line on the same file
local function cli_report(db, args)
  local out = dir .. "/cli.out"
  sh(R .. " report " .. args .. " -o " .. quote(out) .. " " .. quote(db))
  return read_file(out)
end
for _, name in ipairs({ "text", "json", "callgrind", "folded", "chrome", "pprof", "svg" }) do
  local format = reticle.report_format_parse(name)
  eq(format, reticle["REPORT_" .. name:upper()], "report_format_parse " .. name)
  local want = cli_report(made, "--format " .. name)
  eq(reticle.report_write(q, format, nil), want, "report_write " .. name)
  eq(reticle["report_" .. name](q, {}), want, "report_" .. name)
end
eq(reticle.report_format_parse("lcov"), reticle.REPORT_LCOV, "report_format_parse lcov")
eq(reticle.report_format_parse("fdata"), reticle.REPORT_FDATA, "report_format_parse fdata")
eq(reticle.report_format_parse("cachegrind"), reticle.REPORT_CACHEGRIND, "report_format_parse cachegrind")
-- the folded stacks by hand: exclusive ns of each path
eq(reticle.report_folded(q, nil), "main 250000000\nmain;helper 250000000\n", "report_folded by hand")
-- samples per path (reticle report --help; report.h speaks of nanoseconds)
eq(reticle.report_folded(q, { samples = true }), "main 3\nmain;helper 2\n", "report_folded of samples")
eq(reticle.report_folded(q, { samples = 1 }), cli_report(made, "-f folded --samples"), "folded --samples")
eq(reticle.report_text(q, { top = 1 }), cli_report(made, "--top 1"), "report_text top")
eq(reticle.report_text(q, { all = true }), cli_report(made, "--all"), "report_text all")
eq(reticle.report_tree(q), cli_report(made, "--tree"), "report_tree")
local json_path = dir .. "/made.json"
eq(reticle.report_json(q, nil, json_path), true, "report_json to a file")
eq(read_file(json_path), cli_report(made, "-f json"), "report_json's file")
eq(reticle.report_tree(q, dir .. "/tree.txt"), true, "report_tree to a file")
eq(read_file(dir .. "/tree.txt"), cli_report(made, "--tree"), "report_tree's file")
fails({ "report_format_parse", reticle.strerror(-reticle.ERR_BAD_OPTION) }, reticle.report_format_parse, "nope")
fails({ "report_write" }, reticle.report_write, q, 99, nil)
eq(reticle.report_lcov(q, nil), cli_report(made, "-f lcov"), "report_lcov without source files")
e = reticle.profile_open(ev)
fails({ "report_lcov" }, reticle.report_lcov, e, nil)              -- no block counts
e:close()
fails({ "report_cachegrind" }, reticle.report_cachegrind, q, nil)  -- no memtrace measures
fails({ "report_annotate", reticle.strerror(-2) }, reticle.report_annotate, q, "no_such_function", false)
fails({ "report_json", "/no/such/dir" }, reticle.report_json, q, nil, "/no/such/dir/x.json")
fails({ "top" }, reticle.report_text, q, { top = -1 })

---------------------------------------------------------------- runs of a small program
local src = dir .. "/t.c"
local f = assert(io.open(src, "w"))
f:write([[
#include <stdlib.h>
static volatile long sink;
__attribute__((noinline)) long work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i & 3 ? i : -i;
	return s;
}
int main(int argc, char **argv)
{
	for (int k = 0; k < 7; k++)
		sink += work(atol(argv[1]));
	return 0;
}
]])
f:close()
local prog = dir .. "/t"
sh("cc -g -O1 -o " .. quote(prog) .. " " .. quote(src))
local function run(db, collectors, n)
  sh("cd " .. quote(dir) .. " && " .. R .. " run -c " .. collectors .. " -o " .. quote(db) .. " -- ./t " .. n .. " 2>&1")
  return reticle.profile_open(db)
end
local run1, run2 = dir .. "/run1.db", dir .. "/run2.db"
local a = run(run1, "fcount,bbcount,edges,callgraph", 10)
local b = run(run2, "fcount,bbcount", 40)
-- work: 7 calls (by hand), its address and size as nm gives them
local w = reticle.profile_foreach_function(a, 0, function(fn) if fn.name == "work" then return fn end end)
assert(w, "work is counted")
eq(w.calls, 7, "work's calls")
eq(w.module:match("[^/]*$"), "t", "work's module")
local nm = sh("nm -S " .. quote(prog))
local addr, size = nm:match("(%x+) (%x+) T work\n")
eq(w.addr, tonumber(addr, 16), "work's address (nm)")
eq(w.size, tonumber(size, 16), "work's size (nm)")
eq(w.have, reticle.HAVE_CALLS | reticle.HAVE_INSTRS, "work's counts")
eq(sql(run1, "SELECT calls || '|' || instrs FROM functions WHERE id = " .. w.id), w.calls .. "|" .. w.instrs .. "\n",
   "work's row in the file")
-- bbcount: its blocks' instructions add up to its Ir
local ir = 0
reticle.profile_foreach_block(a, w.id, function(bl) ir = ir + bl.ninstrs * bl.count end)
eq(ir, w.instrs, "work's blocks against its Ir")
-- callgraph: main called work 7 times from one site inside main (nm)
local mainaddr, mainsize = nm:match("(%x+) (%x+) T main\n")
local arcs = {}
reticle.profile_foreach_call(a, function(c) if c.callee == w.id then arcs[#arcs + 1] = c end end)
eq(#arcs, 1, "call sites of work")
eq(arcs[1].count, 7, "calls of work's site")
assert(arcs[1].site >= tonumber(mainaddr, 16) and arcs[1].site < tonumber(mainaddr, 16) + tonumber(mainsize, 16),
       "work's call site lies in main")
-- edges: every branch row of the file
local nbranches = 0
reticle.profile_foreach_branch(a, function() nbranches = nbranches + 1 end)
eq(nbranches .. "\n", sql(run1, "SELECT count(*) FROM branches"), "branches of the run")
eq(reticle.profile_get_totals(b).processes, 1, "one image")
-- reports of the runs against the command line
for _, name in ipairs({ "text", "json", "callgrind", "lcov", "fdata" }) do
  -- the command line's text has 20 rows unless told (the API: no limit)
  eq(reticle.report_write(a, reticle.report_format_parse(name), nil), cli_report(run1, "-f " .. name .. " --top 0"),
     "report_write of the run " .. name)
end
assert(reticle.report_lcov(a, nil):find("FNDA:7,work\n", 1, true), "lcov: work's 7 calls")
eq(reticle.report_fdata(a, { module = "t" }), cli_report(run1, "-f fdata --module t"), "report_fdata module")
eq(reticle.report_callgrind(a, { no_demangle = true }), cli_report(run1, "-f callgrind --no-demangle"),
   "report_callgrind no_demangle")
eq(reticle.report_text(a, { inlined = true, top = 5 }), cli_report(run1, "--inline --top 5"), "report_text inlined")
eq(reticle.report_tree(a), cli_report(run1, "--tree"), "report_tree of the run")
eq(reticle.report_annotate(a, "work", false), sh(R .. " annotate " .. quote(run1) .. " work"), "report_annotate")
eq(reticle.report_annotate(a, "work", true), sh(R .. " annotate --disasm " .. quote(run1) .. " work"),
   "report_annotate disasm")
eq(reticle.report_diff(a, b, { top = 0 }), sh(R .. " diff --top 0 " .. quote(run1) .. " " .. quote(run2)), "report_diff")
eq(reticle.report_diff(a, b, { top = 3 }, dir .. "/diff.txt"), true, "report_diff to a file")
eq(read_file(dir .. "/diff.txt"), sh(R .. " diff --top 3 " .. quote(run1) .. " " .. quote(run2)), "report_diff's file")
e = reticle.profile_open(ev)
fails({ "report_diff" }, reticle.report_diff, a, e, nil)   -- no count in common
e:close()
local mt = dir .. "/mt.db"
local c = run(mt, "memtrace", 10)
eq(reticle.report_cachegrind(c, nil), cli_report(mt, "-f cachegrind"), "report_cachegrind")
c:close()
a:close()
b:close()

---------------------------------------------------------------- the log
-- a profile of a newer schema: rtl_profile_open logs it (info) and fails
local newer = dir .. "/newer.db"
sh("cp " .. quote(made) .. " " .. quote(newer))
sql(newer, "UPDATE meta SET value = '99' WHERE key = 'schema_version'")
local logged = {}
reticle.set_log(function(level, msg) logged[#logged + 1] = level .. " " .. msg end)
reticle.set_log_level(3)
fails({ "profile_open", reticle.strerror(-reticle.ERR_PROFILE_VERSION) }, reticle.profile_open, newer)
eq(#logged, 1, "one message logged")
eq(logged[1], string.format("2 profile %s has schema version 99; this reticle reads up to %d", newer,
                            reticle.PROFILE_SCHEMA_VERSION), "the message")
reticle.set_log_level(1)   -- warnings and errors only
fails({ "profile_open" }, reticle.profile_open, newer)
eq(#logged, 1, "no info message at level 1")
reticle.set_log_level(3)
reticle.set_log(nil)
fails({ "profile_open" }, reticle.profile_open, newer)
eq(#logged, 1, "no message without a log function")
q:close()
print("ok")
