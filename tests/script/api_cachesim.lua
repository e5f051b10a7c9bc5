-- cachesim.h and simpoint.h from Lua (src/script/lua_cachesim.c): every
-- entry called through the module table, its results checked against
-- counts worked out by hand, the headers' own enum text, and `reticle
-- cachesim` / `reticle simpoint` on the same input files.
local ctx = ...
local R = reticle
local cli = ctx.build .. "/src/reticle"
local work = ctx.work .. "/cachesim"
assert(os.execute("mkdir -p '" .. work .. "'"))

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- The error of FN(...) must contain WHAT (the entry's name, a message).
local function raises(what, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "no error, expected one with '" .. what .. "'")
  assert(tostring(err):find(what, 1, true), "error '" .. tostring(err) .. "' lacks '" .. what .. "'")
  return tostring(err)
end

local function eq(got, want, what)
  if got ~= want then
    error(what .. ": got " .. tostring(got) .. ", want " .. tostring(want), 2)
  end
end

-- A small JSON reader for the command line's --format json.
local function json_decode(s)
  local pos = 1
  local value
  local function skip() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local function str()
    local e = s:find('"', pos + 1, true)
    local v = s:sub(pos + 1, e - 1)
    pos = e + 1
    return v
  end
  function value()
    skip()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1
      skip()
      if s:sub(pos, pos) == "}" then pos = pos + 1 return t end
      repeat
        skip()
        local k = str()
        skip()
        pos = pos + 1 -- ':'
        t[k] = value()
        skip()
        c = s:sub(pos, pos)
        pos = pos + 1
      until c == "}"
      return t
    elseif c == "[" then
      local t = {}
      pos = pos + 1
      skip()
      if s:sub(pos, pos) == "]" then pos = pos + 1 return t end
      repeat
        t[#t + 1] = value()
        skip()
        c = s:sub(pos, pos)
        pos = pos + 1
      until c == "]"
      return t
    elseif c == '"' then
      return str()
    end
    local num = s:match("^-?[%d.eE+-]+", pos)
    pos = pos + #num
    return math.tointeger(tonumber(num)) or tonumber(num)
  end
  return value()
end

local function run_json(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  assert(p:close(), cmd .. " failed")
  return json_decode(out)
end

---------------------------------------------------------------------------
-- Constants: every RTL_ enumerator of the two headers, valued from the text.
for _, h in ipairs({ "cachesim.h", "simpoint.h" }) do
  local f = assert(io.open(ctx.source .. "/include/reticle/" .. h))
  local text = f:read("a")
  f:close()
  for body in text:gmatch("enum[%w_ ]*(%b{})") do
    local v = -1
    for item in body:sub(2, -2):gsub("/%*.-%*/", ""):gmatch("[^,]+") do
      local name, val = item:match("^%s*RTL_([%w_]+)%s*=?%s*(%d*)")
      if name then
        v = val ~= "" and tonumber(val) or v + 1
        eq(R[name], v, "reticle." .. name)
      end
    end
  end
end
eq(R.REUSE_BUCKETS, 48, "REUSE_BUCKETS")

---------------------------------------------------------------------------
-- Configurations: the fields follow from the spec by hand.
local spec = "l1i=32k:8:64,l1d=48k:12:64:fifo:wt:nwa,l2=1m:16:128:plru,inclusive=yes,seed=7,name=mine"
local c = R.cache_config_parse(spec)
eq(c.name, "mine", "name")
local l1i, l1d, l2 = c.level[R.L1I], c.level[R.L1D], c.level[R.L2]
eq(l1i.present, true, "l1i present")
eq(l1i.size, 32768, "l1i size"); eq(l1i.assoc, 8, "l1i assoc"); eq(l1i.line, 64, "l1i line")
eq(l1i.repl, R.REPL_LRU, "l1i repl"); eq(l1i.write, R.WRITE_BACK, "l1i write")
eq(l1i.no_write_allocate, false, "l1i nwa")
eq(l1d.size, 49152, "l1d size"); eq(l1d.assoc, 12, "l1d assoc")
eq(l1d.repl, R.REPL_FIFO, "l1d repl"); eq(l1d.write, R.WRITE_THROUGH, "l1d write")
eq(l1d.no_write_allocate, true, "l1d nwa")
eq(l2.size, 1 << 20, "l2 size"); eq(l2.assoc, 16, "l2 assoc"); eq(l2.line, 128, "l2 line")
eq(l2.repl, R.REPL_PLRU, "l2 repl")
eq(c.level[R.L1].present, false, "l1 absent"); eq(c.level[R.L3].present, false, "l3 absent")
eq(c.inclusive, true, "inclusive"); eq(c.seed, 7, "seed")
eq(c.cross, R.CROSS_SPLIT, "cross"); eq(c.modify_as_load, false, "modify_as_load")
eq(c.max_data_size, 0, "max_data_size")
-- docs/cachesim.md: the preset is cross=once, modify=load, wnone, maxsize = smallest line
local cg = R.cache_config_parse("cachegrind,l1i=32768:8:64,l1d=32768:8:32,ll=8m:16:64")
eq(cg.name, "cachegrind,l1i=32768:8:64,l1d=32768:8:32,ll=8m:16:64", "default name")
eq(cg.cross, R.CROSS_ONCE, "cachegrind cross"); eq(cg.modify_as_load, true, "cachegrind modify")
eq(cg.max_data_size, 32, "cachegrind maxsize")
eq(cg.level[R.L2].size, 8 << 20, "ll is l2"); eq(cg.level[R.L2].write, R.WRITE_NONE, "ll wnone")
eq(cg.level[R.L1D].write, R.WRITE_NONE, "l1d wnone")
raises("size 1000 is not a multiple of line size x ways (64 x 8)", R.cache_config_parse, "l1d=1000:8:64")
raises("cache_config_parse", R.cache_config_parse, "l1d=1k:1:64,l2=4k:4:48")
raises("l3: given without l2", R.cache_config_parse, "l1d=1k:1:64,l3=4k:4:64")

eq(R.cache_config_check(c), true, "check of a parsed config")
eq(R.cache_config_check({ level = { [R.L1D] = { size = 1024, assoc = 1, line = 64 } } }), true,
   "check of a level given without present")
l2.line = 48
raises("cache_config_check: l2: line size 48 is not a power of two", R.cache_config_check, c)
l2.line = 128
l2.present = false
raises("no first level", R.cache_config_check, { level = { [R.L2] = l2, [R.L1D] = { present = false } } })
raises("l3: given without l2", R.cache_config_check,
       { level = { [R.L1] = { size = 1024, assoc = 2, line = 64 }, [R.L3] = { size = 4096, assoc = 4, line = 64 } } })
raises("plru needs", R.cache_config_check,
       { level = { [R.L1] = { size = 64 * 3, assoc = 3, line = 64, repl = R.REPL_PLRU } } })
raises("bad argument", R.cache_config_check, "l1d=1k:1:64")
-- the C check refuses them (they once divided by zero, or crashed the bank)
raises("cache_config_check: l1d: size and line size must be at least 1", R.cache_config_check,
       { level = { [R.L1D] = { size = 1024, assoc = 1, line = 0 } } })
raises("unknown replacement or write policy", R.cache_config_check,
       { level = { [R.L1D] = { size = 1024, assoc = 1, line = 64, repl = 9 } } })
raises("cachesim_add", R.cachesim_add, R.cachesim_create(),
       { level = { [R.L1D] = { size = 1024, assoc = 1, line = 64 }, [R.L2] = { assoc = 1, line = 64 } } })
raises("field 'size'", R.cache_config_check, { level = { [R.L1] = { size = "big" } } })

---------------------------------------------------------------------------
-- A bank whose counts are worked out by hand.
--  A: l1d 1 KB direct-mapped (16 sets of 64 B), l2 8 KB 2-way (64 sets)
--  B: l1d 2 KB 2-way (16 sets): the same geometry as A's l1d, one engine
local specA, specB = "l1d=1k:1:64,l2=8k:2:64", "l1d=2k:2:64"
local b = R.cachesim_create()
eq(R.cachesim_add(b, R.cache_config_parse(specA)), 0, "add A")
eq(R.cachesim_add(b, R.cache_config_parse(specB)), 1, "add B")
R.cachesim_enable_reuse(b, 64)
R.cachesim_set_threads(b, 2)   -- (one group here: A's and B's l1d share an engine)
raises("cachesim_set_threads", R.cachesim_set_threads, b, 0)
R.cachesim_enable_attribution(b, 0, R.L1D)
raises("cachesim_enable_attribution", R.cachesim_enable_attribution, b, 0, R.L1I)
raises("cachesim_enable_miss_attribution", R.cachesim_enable_miss_attribution, b, 5, R.L1D)
raises("cachesim_enable_reuse", R.cachesim_enable_reuse, R.cachesim_create(), 48)
eq(R.cachesim_count(b), 2, "count")
eq(R.cachesim_config(b, 2), nil, "config past the end")
eq(R.cachesim_config(b, -1), nil, "config before the start")
local got = R.cachesim_config(b, 1)
eq(got.name, specB, "config name"); eq(got.level[R.L1D].assoc, 2, "config l1d ways")
eq(got.level[R.L1D].size, 2048, "config l1d size"); eq(got.level[R.L2].present, false, "config B l2")

-- Stream 1, one access per call: 4 KB walked twice by 4-byte loads, the
-- first walk from instruction 0x401000, the second from 0x401010.
for pass = 0, 1 do
  for a = 0x10000, 0x10fff, 4 do
    R.cachesim_push(b, a, 4, R.ACC_LOAD, 0x401000 + 16 * pass)
  end
end
-- A's l1d: 64 lines each walk (the buffer is 4 times the cache), 64 new;
-- A's l2 holds all 64 lines (one per set): 64 misses, then 64 hits.
local s = R.cachesim_stats(b, 0, R.L1D)
eq(s.access[R.ACC_LOAD], 2048, "A l1d loads"); eq(s.miss[R.ACC_LOAD], 128, "A l1d load misses")
eq(s.compulsory, 64, "A l1d compulsory"); eq(s.writebacks, 0, "A l1d writebacks")
s = R.cachesim_stats(b, 0, R.L2)
eq(s.access[R.ACC_LOAD], 128, "A l2 loads"); eq(s.miss[R.ACC_LOAD], 64, "A l2 load misses")
s = R.cachesim_stats(b, 1, R.L1D)
eq(s.access[R.ACC_LOAD], 2048, "B l1d loads"); eq(s.miss[R.ACC_LOAD], 128, "B l1d load misses")
raises("cachesim_add", R.cachesim_add, b, R.cache_config_parse(specB)) -- after the first push
raises("cachesim_enable_reuse", R.cachesim_enable_reuse, b, 64)
raises("cachesim_set_threads", R.cachesim_set_threads, b, 2) -- after the first push

-- Stream 2, a list: 2 KB stored by 8-byte stores from 0x402000 (lines
-- 2048..2079, sets 0..15 twice). A's l1d: 32 misses; the second 16 evict
-- the dirty first 16: 16 write-backs, which hit in l2 (sets 0..31 get a
-- second line), where the 32 store misses are new lines.
-- B's l1d (32 lines): the second 16 evict region 1's clean lines.
local list = {}
for a = 0x20000, 0x207ff, 8 do
  list[#list + 1] = { addr = a, iaddr = 0x402000, size = 8, kind = R.ACC_STORE }
end
R.cachesim_push(b, list)
s = R.cachesim_stats(b, 0, R.L1D)
eq(s.access[R.ACC_STORE], 256, "A l1d stores"); eq(s.miss[R.ACC_STORE], 32, "A l1d store misses")
eq(s.compulsory, 96, "A l1d compulsory after stores"); eq(s.writebacks, 16, "A l1d writebacks")
eq(s.access[R.ACC_MODIFY], 0, "A l1d modify"); eq(s.access[R.ACC_WRITEBACK], 0, "A l1d writeback kind")
s = R.cachesim_stats(b, 0, R.L2)
eq(s.access[R.ACC_STORE], 32, "A l2 stores"); eq(s.miss[R.ACC_STORE], 32, "A l2 store misses")
eq(s.access[R.ACC_WRITEBACK], 16, "A l2 write-backs in"); eq(s.miss[R.ACC_WRITEBACK], 0, "A l2 write-back misses")
eq(s.compulsory, 96, "A l2 compulsory"); eq(s.writebacks, 0, "A l2 writebacks")
s = R.cachesim_stats(b, 1, R.L1D)
eq(s.miss[R.ACC_STORE], 32, "B l1d store misses"); eq(s.writebacks, 0, "B l1d writebacks")
eq(R.cachesim_engines(b), 2, "engines: one for both l1d, one for l2")

-- A warm-up of the lower levels: line 0x50000 passes the 1 KiB L1D
-- filter into the L2 and counts nothing; the load after it misses the L1D,
-- which the warm-up left alone, and hits in the L2. Without the warm-up
-- the L2 misses too.
for _, warm in ipairs({ true, false }) do
  local w = R.cachesim_create()
  R.cachesim_add(w, R.cache_config_parse("l1d=1k:1:64,l2=64k:4:64"))
  if warm then
    R.cachesim_warm_lower(w, { { addr = 0x50000, size = 8, kind = R.ACC_LOAD } })
    eq(R.cachesim_stats(w, 0, R.L2).access[R.ACC_LOAD], 0, "a warm-up counts nothing")
  end
  R.cachesim_push(w, 0x50008, 8, R.ACC_LOAD)
  eq(R.cachesim_stats(w, 0, R.L1D).miss[R.ACC_LOAD], 1, "l1d miss after the lower warm-up")
  eq(R.cachesim_stats(w, 0, R.L2).miss[R.ACC_LOAD], warm and 0 or 1, "l2 miss, warm " .. tostring(warm))
  R.cachesim_destroy(w)
end
raises("cachesim_warm_lower", R.cachesim_warm_lower, b, { { addr = 0x30040, size = 4, kind = 9 } })

-- Refused pushes simulate nothing (a bad kind in a list: none of it).
raises("cachesim_push", R.cachesim_push, b, 0x30000, 4, R.ACC_WRITEBACK)
raises("cachesim_push", R.cachesim_push, b,
       { { addr = 0x30000, size = 4, kind = R.ACC_LOAD }, { addr = 0x30040, size = 4, kind = 9 } })
eq(R.cachesim_stats(b, 0, R.L1D).access[R.ACC_LOAD], 2048, "nothing pushed by refused pushes")
raises("bad argument", R.cachesim_push, b, 0x30000, -1, R.ACC_LOAD)
raises("cachesim_stats", R.cachesim_stats, b, 0, R.L3)
raises("cachesim_stats", R.cachesim_stats, b, 2, R.L1D)

-- Reuse distances (64-byte lines): stream 1 has 64 cold references, 64 at
-- distance 63 (bucket 1 + floor(log2 63) = 6) and 1920 at distance 0;
-- stream 2 has 32 cold and 224 at distance 0.
local h = R.cachesim_reuse(b)
eq(h.line, 64, "reuse line"); eq(h.total, 2304, "reuse total"); eq(h.cold, 96, "reuse cold")
eq(h.bucket[0], 2144, "bucket 0"); eq(h.bucket[6], 64, "bucket 6")
eq(h.bucket[5], 0, "bucket 5"); eq(h.bucket[7], 0, "bucket 7"); eq(h.bucket[47], 0, "bucket 47")
eq(R.reuse_misses(h, 64), 96, "misses of 64 lines")
eq(R.reuse_misses(h, 32), 160, "misses of 32 lines")
-- a hand-made histogram: distances 0 (5), 4..7 (3), cold 2
local hand = { line = 64, total = 10, cold = 2, bucket = { [0] = 5, [3] = 3 } }
eq(R.reuse_misses(hand, 4), 5, "hand misses of 4 lines")
eq(R.reuse_misses(hand, 8), 2, "hand misses of 8 lines")
raises("cachesim_reuse", R.cachesim_reuse, R.cachesim_create())

-- Attribution of A's l1d, by instruction and summed over ranges.
local instrs = {}
R.cachesim_foreach_instr(b, function(cost) instrs[#instrs + 1] = cost end)
eq(#instrs, 3, "instructions")
local want = { { 0x401000, 1024, 64 }, { 0x401010, 1024, 64 }, { 0x402000, 256, 32 } }
for i, w in ipairs(want) do
  eq(instrs[i].iaddr, w[1], "iaddr " .. i)
  eq(instrs[i].access, w[2], "access " .. i)
  eq(instrs[i].miss, w[3], "miss " .. i)
end
local calls = 0
R.cachesim_foreach_instr(b, function() calls = calls + 1 return true end)
eq(calls, 1, "a true result stops the walk")
raises("boom", R.cachesim_foreach_instr, b, function() error("boom") end)
local sums = R.cachesim_sum_functions(b, { { 0x400000, 0x401010 }, { 0x401010, 0x402000 }, { 0x402000, 0x402001 } })
eq(#sums, 3, "sums")
eq(sums[1].iaddr, 0x400000, "sum 1 start"); eq(sums[1].access, 1024, "sum 1 access"); eq(sums[1].miss, 64, "sum 1 miss")
eq(sums[2].access, 1024, "sum 2 access"); eq(sums[3].access, 256, "sum 3 access"); eq(sums[3].miss, 32, "sum 3 miss")
sums = R.cachesim_sum_functions(b, { { 0x401000, 0x402000 } })
eq(sums[1].access, 2048, "one range access"); eq(sums[1].miss, 128, "one range miss")
raises("bad argument", R.cachesim_sum_functions, b, { { 0x401000, "end" } })

-- Miss attribution: access then counts only the misses' accesses.
local bm = R.cachesim_create()
R.cachesim_add(bm, R.cache_config_parse(specA))
R.cachesim_enable_miss_attribution(bm, 0, R.L1D)
R.cachesim_push(bm, list)
instrs = {}
bm:foreach_instr(function(cost) instrs[#instrs + 1] = cost end)
eq(#instrs, 1, "miss attribution instructions")
eq(instrs[1].access, 32, "miss attribution access"); eq(instrs[1].miss, 32, "miss attribution miss")

R.cachesim_destroy(bm)
R.cachesim_destroy(bm) -- twice: harmless
raises("closed", R.cachesim_count, bm)
raises("closed", function() return bm:stats(0, R.L1D) end)

---------------------------------------------------------------------------
-- Trace files: the same pseudo-random accesses as a din and a lackey file;
-- the readers give back what was written, and a bank fed from them agrees
-- with `reticle cachesim` on the files.
local records = {}
do
  local x, pc = 12345, 0x400000
  local function rnd(n)
    x = (x * 6364136223846793005 + 1442695040888963407)
    return (x >> 33) % n
  end
  local sizes = { 1, 2, 4, 8, 16, 32 }
  for _ = 1, 6000 do
    pc = rnd(8) == 0 and 0x400000 + rnd(256) * 4 or pc + 1 + rnd(6)
    records[#records + 1] = { t = "i", addr = pc, size = 1 + rnd(8) }
    for _ = 1, rnd(3) do
      local base = rnd(4) == 0 and 0x20000000 + rnd(4096) * 16 or 0x10000000 + rnd(512) * 8 + rnd(8)
      records[#records + 1] = { t = ({ "r", "w", "m" })[1 + rnd(3)], addr = base, size = sizes[1 + rnd(#sizes)] }
    end
  end
end
local din_kind = { r = R.ACC_LOAD, w = R.ACC_STORE, m = R.ACC_LOAD, i = R.ACC_IFETCH }
local lackey_kind = { r = R.ACC_LOAD, w = R.ACC_STORE, m = R.ACC_MODIFY, i = R.ACC_IFETCH }
local din, lackey = { "# a comment\n", "c 0 0\n" }, { "==1== Lackey, an example Valgrind tool\n" }
for _, r in ipairs(records) do
  din[#din + 1] = string.format("%s %x %x\n", r.t, r.addr, r.size)
  lackey[#lackey + 1] = r.t == "i" and string.format("I  %08x,%d\n", r.addr, r.size)
    or string.format(" %s %08x,%d\n", ({ r = "L", w = "S", m = "M" })[r.t], r.addr, r.size)
end
local din_path, lackey_path = work .. "/t.din", work .. "/t.lackey"
write(din_path, table.concat(din))
write(lackey_path, table.concat(lackey))

local function read_all(path, format, kinds, header_lines)
  local t = R.trace_open(path, format)
  eq(#R.trace_read(t, 0), 0, "read of 0")
  local all, iaddr = {}, 0
  repeat
    local part = R.trace_read(t, 1000)
    for _, a in ipairs(part) do all[#all + 1] = a end
  until #part == 0
  eq(#all, #records, path .. ": accesses")
  for i, r in ipairs(records) do
    local a = all[i]
    if r.t == "i" then iaddr = r.addr end
    if a.addr ~= r.addr or a.size ~= r.size or a.kind ~= kinds[r.t] or a.iaddr ~= iaddr then
      error(string.format("%s: access %d: %x %d %d %x, wrote %x %d %s %x", path, i, a.addr, a.size,
                          a.kind, a.iaddr, r.addr, r.size, r.t, iaddr))
    end
  end
  eq(R.trace_line(t), #records + header_lines, path .. ": lines read")
  eq(R.trace_error(t), "", path .. ": no error")
  R.trace_close(t)
  R.trace_close(t) -- twice: harmless
  raises("closed", R.trace_line, t)
  return all
end
local traces = {
  { path = din_path, accesses = read_all(din_path, R.TRACE_DIN, din_kind, 2) },
  { path = lackey_path, accesses = read_all(lackey_path, R.TRACE_AUTO, lackey_kind, 1) },
}

local specs = { "l1i=1k:2:64,l1d=1k:2:64,l2=4k:4:64",
                "l1=2k:4:32:plru,l2=8k:8:64:wt,cross=once",
                "cachegrind,l1i=1k:2:64,l1d=2k:4:64,ll=16k:8:64",
                "l1d=1k:4:64:fifo:nwa,l2=4k:4:64,inclusive=yes" }
local level_names = { [R.L1I] = "l1i", [R.L1D] = "l1d", [R.L1] = "l1", [R.L2] = "l2", [R.L3] = "l3" }
local kind_names = { [R.ACC_LOAD] = "load", [R.ACC_STORE] = "store", [R.ACC_MODIFY] = "modify",
                     [R.ACC_IFETCH] = "ifetch", [R.ACC_WRITEBACK] = "writeback" }
for _, tr in ipairs(traces) do
  local bank = R.cachesim_create()
  local cmd = { cli, "cachesim", "--format json --mrc --mrc-line 64 --mrc-max 64k --attribute l1d --top 100000" }
  for _, sp in ipairs(specs) do
    bank:add(R.cache_config_parse(sp))
    cmd[#cmd + 1] = "--cache '" .. sp .. "'"
  end
  bank:enable_reuse(64)
  bank:enable_attribution(0, R.L1D)
  R.cachesim_push(bank, tr.accesses)
  cmd[#cmd + 1] = "'" .. tr.path .. "'"
  local j = run_json(table.concat(cmd, " "))
  eq(j.references, #records, tr.path .. ": cli references")
  eq(R.cachesim_engines(bank), j.engines, tr.path .. ": engines")
  for ci, jc in ipairs(j.configs) do
    eq(R.cachesim_config(bank, ci - 1).name, jc.name, "config name")
    for l = 0, R.LEVELS - 1 do
      local jl = jc.levels[level_names[l]]
      if jl then
        local st = R.cachesim_stats(bank, ci - 1, l)
        local what = tr.path .. " " .. jc.name .. " " .. level_names[l]
        for k = 0, R.ACC_KINDS - 1 do
          eq(st.access[k], jl[kind_names[k]].accesses, what .. " " .. kind_names[k] .. " accesses")
          eq(st.miss[k], jl[kind_names[k]].misses, what .. " " .. kind_names[k] .. " misses")
        end
        eq(st.compulsory, jl.compulsory, what .. " compulsory")
        eq(st.writebacks, jl.writebacks, what .. " writebacks")
      else
        raises("cachesim_stats", R.cachesim_stats, bank, ci - 1, l)
      end
    end
  end
  local hist = bank:reuse()
  eq(hist.total, j.reuse.references, "reuse references"); eq(hist.cold, j.reuse.cold, "reuse cold")
  for k = 0, R.REUSE_BUCKETS - 1 do eq(hist.bucket[k], j.reuse.buckets[k + 1], "bucket " .. k) end
  for _, m in ipairs(j.reuse.mrc) do
    eq(R.reuse_misses(hist, m.size // 64), m.misses, "mrc at " .. m.size)
  end
  local by_iaddr = {}
  R.cachesim_foreach_instr(bank, function(cost) by_iaddr[cost.iaddr] = cost end)
  local n = 0
  for _ in pairs(by_iaddr) do n = n + 1 end
  eq(n, #j.attribution.instructions, "attributed instructions")
  for _, ji in ipairs(j.attribution.instructions) do
    local cost = assert(by_iaddr[ji.iaddr], "instruction missing")
    eq(cost.access, ji.accesses, "instruction accesses"); eq(cost.miss, ji.misses, "instruction misses")
  end
  R.cachesim_destroy(bank)
end

-- Classic din: labels 0-3 (3 is a read), 4 a flush (skipped), size 4.
write(work .. "/c.din", "0 1000\n1 2000\n2 3000\n3 4000\n4 5000\n")
local t = R.trace_open(work .. "/c.din", R.TRACE_DIN_CLASSIC)
local acc = R.trace_read(t, 10)
eq(#acc, 4, "classic accesses")
for i, w in ipairs({ { 0x1000, R.ACC_LOAD }, { 0x2000, R.ACC_STORE }, { 0x3000, R.ACC_IFETCH }, { 0x4000, R.ACC_LOAD } }) do
  eq(acc[i].addr, w[1], "classic addr " .. i); eq(acc[i].kind, w[2], "classic kind " .. i)
  eq(acc[i].size, 4, "classic size " .. i)
end
eq(R.trace_line(t), 5, "classic lines")
R.trace_close(t)
-- A malformed line stops the reader with its number.
write(work .. "/bad.din", "r 1000 4\nw 2000 8\nx 3000\n")
t = R.trace_open(work .. "/bad.din")
raises("trace_read: line 3: unknown access type", R.trace_read, t, 10)
assert(R.trace_error(t):find("line 3", 1, true), "trace_error: " .. R.trace_error(t))
eq(R.trace_line(t), 3, "line of the error")
raises("bad argument", R.trace_read, t, -1)
t:close()
raises("trace_open", R.trace_open, work .. "/no-such-trace")

---------------------------------------------------------------------------
-- BBVs and SimPoint: 12 intervals of three phases (blocks 1-2, 3-4, 5-6)
-- with a little noise, built through the API and written as an exp-bbv file.
local phases = { 1, 1, 2, 3, 2, 1, 3, 3, 2, 1, 2, 3 }
local v = R.bbv_create()
local bb, totals = {}, {}
for i, p in ipairs(phases) do
  local ids, counts = { 2 * p - 1, 2 * p }, { 1000 + 7 * i, 500 + (i * 13) % 50 }
  if i % 4 == 0 then ids[3], counts[3] = 7, 20 + i end -- a shared block
  R.bbv_add_interval(v, ids, counts)
  local line, sum = { "T" }, 0
  for k = 1, #ids do
    line[#line + 1] = string.format(":%d:%d ", ids[k], counts[k])
    sum = sum + counts[k]
  end
  bb[#bb + 1] = table.concat(line) .. "\n"
  totals[i] = sum
end
local bb_path = work .. "/p.bb"
write(bb_path, "# exp-bbv\n" .. table.concat(bb))
local vr = R.bbv_read(bb_path)
eq(R.bbv_intervals(v), #phases, "intervals built"); eq(R.bbv_intervals(vr), #phases, "intervals read")
for i = 1, #phases do
  eq(R.bbv_interval_total(v, i - 1), totals[i], "total built " .. i)
  eq(R.bbv_interval_total(vr, i - 1), totals[i], "total read " .. i)
end
eq(R.bbv_interval_total(v, #phases), 0, "total past the end")

local function same_result(a, j, what)
  eq(a.k, j.k, what .. ": k")
  eq(#a.bic, #j.bic, what .. ": BICs")
  eq(a.tried, #j.bic, what .. ": tried")
  for i, x in ipairs(j.bic) do
    assert(math.abs(a.bic[i] - x) <= 1e-5 * math.max(1, math.abs(x)), what .. ": bic " .. i)
  end
  eq(#a.points, #j.points, what .. ": points")
  for i, p in ipairs(j.points) do
    local q = a.points[i]
    eq(q.interval, p.interval, what .. ": point interval"); eq(q.cluster, p.cluster, what .. ": point cluster")
    eq(q.members, p.members, what .. ": point members")
    assert(math.abs(q.weight - p.weight) < 1e-6, what .. ": point weight")
  end
end
local r = R.simpoint_choose(v, { max_k = 5, seed = 3 })
same_result(r, run_json(cli .. " simpoint --format json -k 5 --seed 3 '" .. bb_path .. "'"), "k 5 seed 3")
same_result(R.simpoint_choose(vr, { max_k = 5, seed = 3 }), r, "read vs built") -- the same data
-- several points per cluster, as the command line draws them
local rp = R.simpoint_choose(v, { max_k = 5, seed = 3, points = 12 })
same_result(rp, run_json(cli .. " simpoint --format json -k 5 --seed 3 --points 12 '" .. bb_path .. "'"), "points 12")
assert(#rp.points > #r.points, "points 12: more points than clusters")
same_result(R.simpoint_choose(v), run_json(cli .. " simpoint --format json '" .. bb_path .. "'"), "defaults")
same_result(R.simpoint_choose(v, { dims = 4, inits = 2, seed = 9 }),
            run_json(cli .. " simpoint --format json --dims 4 --inits 2 --seed 9 '" .. bb_path .. "'"), "dims inits")
-- by hand: three phases, one cluster each; weight = members / 12
eq(r.k, 3, "k of three phases")
eq(#r.label, #phases, "labels")
local cluster_of = {}
for i, p in ipairs(phases) do
  cluster_of[p] = cluster_of[p] or r.label[i]
  eq(r.label[i], cluster_of[p], "label of interval " .. (i - 1))
end
assert(cluster_of[1] ~= cluster_of[2] and cluster_of[2] ~= cluster_of[3] and cluster_of[1] ~= cluster_of[3])
for i, p in ipairs(r.points) do
  eq(r.label[p.interval + 1], p.cluster, "point's interval in its cluster")
  eq(p.members, 4, "members")
  assert(math.abs(p.weight - 4 / 12) < 1e-12, "weight")
  assert(i == 1 or p.interval > r.points[i - 1].interval, "points sorted by interval")
end
eq(R.simpoint_choose(v, { bic_frac = 0 }).k, 1, "bic_frac 0: the smallest k")
raises("simpoint_choose", R.simpoint_choose, v, { iters = 0 })
raises("simpoint_choose", R.simpoint_choose, R.bbv_create())
raises("bad argument", R.bbv_add_interval, v, { 1, 2 }, { 5 })
raises("bbv_add_interval", R.bbv_add_interval, v, { 0 }, { 5 })   -- ids are 1-based

write(work .. "/bad.bb", "T:1:5 :2:6\nT:1:x\n")
raises("bbv_read: " .. work .. "/bad.bb: line 2", R.bbv_read, work .. "/bad.bb")
write(work .. "/empty.bb", "# nothing\n")
raises("no basic-block vector", R.bbv_read, work .. "/empty.bb")
raises("bbv_read", R.bbv_read, work .. "/no-such.bb")

R.bbv_destroy(vr)
R.bbv_destroy(vr) -- twice: harmless
raises("closed", R.bbv_intervals, vr)
v:destroy()
R.cachesim_destroy(b)
print("ok")
