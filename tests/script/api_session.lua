-- reticle/session.h, collector.h and probe.h from Lua: collectors written
-- in Lua against the program's own structure (tests/run/programs/span.c:
-- work() is called 500 times, 300 of them with n = 20; tick() 20,000 times
-- in "loop"), the built-in collectors' list against `reticle run --help`,
-- the session's pid against the profile's meta (sqlite3), attach and stop
-- on a sleeping process, and errors that name their entry.
local ctx = ...
local prog = ctx.work .. "/span"
assert(os.execute(string.format("cc -O2 -g -o %s %s/tests/run/programs/span.c -ldl", prog, ctx.source)))
local reticle_cli = ctx.build .. "/src/reticle"

local function sh(cmd)
  local f = assert(io.popen(cmd))
  local out = f:read("a")
  f:close()
  return out
end

local function raises(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "no error, expected " .. pattern)
  assert(tostring(err):find(pattern, 1, true), "error '" .. tostring(err) .. "' lacks " .. pattern)
end

-- the built-in collectors, as `reticle run --help` lists them
local help = sh(reticle_cli .. " run --help")
local n = reticle.collector_count()
assert(n >= 10, "collector_count " .. n)
for i = 0, n - 1 do
  local c = reticle.collector_at(i)
  assert(help:find("\n%s+" .. c.name .. "%s"), c.name .. " not in run --help")
  assert(reticle.collector_find(c.name).name == c.name)
  assert(type(c.summary) == "string" and #c.summary > 0)
  assert(reticle.collector_check(c) == true, c.name .. " fails its check")
end
assert(reticle.collector_at(n) == nil and reticle.collector_find("no-such") == nil)
assert(reticle.collector_find("calltime").timers == true and reticle.collector_find("fcount").timers == false)

-- every plan_* entry on the check's made-up function (a block of every kind)
local planned = {}
local every = reticle.collector{
  name = "every-plan", timers = true,
  plan = function(cfg, plan)
    assert(#cfg.blocks > 0 and cfg.name)
    for _, fn in ipairs({ "plan_count_blocks", "plan_count_branches", "plan_count_entry",
                          "plan_count_back_edges", "plan_count_calls", "plan_time_function",
                          "plan_count_intervals", "plan_trace_memory", "plan_signal_function" }) do
      reticle[fn](cfg, plan)
      planned[fn] = true
    end
    for i = 1, #cfg.blocks do reticle.cfg_back_edge(cfg, i) end
    raises("no such block", reticle.cfg_back_edge, cfg, #cfg.blocks + 1)
    raises("plan_add", reticle.plan_add, plan, reticle.POINT_BLOCK, cfg.addr + 12345,
           { op = reticle.PRIM_COUNT })
  end,
}
assert(reticle.collector_check(every) == true)
assert(planned.plan_signal_function and planned.plan_count_intervals)
local bad = reticle.collector{ name = "bad-plan", plan = function() error("no plan today") end }
raises("no plan today", reticle.collector_check, bad)
local untimed = reticle.collector{ name = "untimed", plan = function(cfg, plan) reticle.plan_time_function(cfg, plan) end }
local ok, why = reticle.collector_check(untimed)
assert(ok == false and type(why) == "string", "a timer without timers passed its check")

-- a collector in Lua: entries of every function, work()'s calls with n = 20
-- (a predicate on its first argument), and which blocks end in back-edges
local seen, back, found = {}, {}, 0
local mine = reticle.collector{
  name = "lua-count",
  plan = function(cfg, plan)
    reticle.plan_count_entry(cfg, plan)
    if cfg.name == "work" then
      reticle.plan_add(plan, reticle.POINT_ENTRY, cfg.addr, { op = reticle.PRIM_COUNT, id = 7,
        pred = { { operand = reticle.OPND_ARG, index = 0, size = 4, cmp = reticle.CMP_EQ, value = 20 } } })
    end
    if cfg.module:find("span$") and cfg.name then
      for i = 1, #cfg.blocks do
        if reticle.cfg_back_edge(cfg, i) then back[cfg.name] = true end
      end
    end
  end,
  finish = function(f, profile)
    if not f.module:find("span$") then return end
    seen[f.name] = f.entries
    local c = reticle.counter_find(f.counters, reticle.POINT_ENTRY, f.addr)
    assert(c and c.value == f.entries, "counter_find: " .. tostring(c and c.value))
    for _, k in ipairs(f.counters) do
      if k.id == 7 then found = k.value end
    end
  end,
}
local out = ctx.work .. "/session.db"
local s = reticle.session_create{ collectors = { mine, "fcount" }, output = out, meta = { purpose = "api" } }
assert(reticle.session_pid(s) == 0)
reticle.session_launch(s, { prog, "phases" })
local pid = reticle.session_pid(s)
assert(pid > 0)
local status = reticle.session_run(s)
assert(status == 0, "status " .. status)
assert(seen.work == 500 and seen.phase_a == 2 and seen.phase_b == 1, "entries " .. tostring(seen.work))
assert(found == 300, "work(20) counted " .. found .. " times")
assert(back.work and back.phase_a and back.phase_b and not back.parse, "back-edges")
assert(reticle.session_profile_count(s) == 1 and reticle.session_profile_path(s, 0) == out)
assert(reticle.session_profile_path(s, 1) == nil)
assert(reticle.session_points_unreached(s) == 0)   -- no --sample simpoint
local meta = sh(string.format("sqlite3 %s \"select value from meta where key in ('pid', 'purpose') order by key\"", out))
assert(meta == pid .. "\napi\n", "meta: " .. meta)
local st = reticle.session_stats(s)
assert(st.functions_instrumented > 0 and st.processes == 1 and st.profiles_failed == 0)
reticle.session_destroy(s)
raises("destroyed", reticle.session_pid, s)

-- live counts and points while it runs, copies made again from a tick
local live, points, remade, hz = 0, 0, -1, 0
local ided = reticle.collector{
  name = "ided",
  plan = function(cfg, plan)
    if cfg.name == "tick" then
      reticle.plan_add(plan, reticle.POINT_ENTRY, cfg.addr, { op = reticle.PRIM_COUNT, id = 3 })
    end
  end,
}
s = reticle.session_create{ collectors = { "fcount", ided }, output = ctx.work .. "/live.db",
                            dynamic_probes = true }
reticle.session_launch(s, { prog, "loop" })
-- (a descriptor Lua cannot make: the refusal of one that is not there)
raises("session_tick_on_fd", reticle.session_tick_on_fd, s, -1)
reticle.session_on_tick(s, 0.1, function(sess)
  for _, f in ipairs(reticle.session_live(sess)) do
    if f.name == "tick" and f.calls > live then live = f.calls end
  end
  for _, p in ipairs(reticle.session_live_points(sess)) do
    if p.name == "tick" and p.id == 3 and p.value > points then points = p.value end
  end
  if remade < 0 and live > 0 then
    remade = reticle.session_reinstrument(sess, function(module, name, addr) return name == "tick" end)
  end
  hz = reticle.session_tsc_hz(sess)
end)
assert(reticle.session_run(s) == 0)
assert(live > 0 and live < 20000, "live calls " .. live)
assert(points > 0 and points <= 20000, "live points " .. points)
assert(remade >= 1, "reinstrument made " .. remade)
assert(hz > 1e8, "tsc_hz " .. hz)
reticle.session_destroy(s)

-- attach to a sleeping process, stopped from a tick, left running
local sleeper = tonumber(sh("sleep 30 >/dev/null 2>&1 & echo $!"))
for _ = 1, 200 do   -- attached once it runs sleep (not while the shell's child execs it)
  local comm = io.open("/proc/" .. sleeper .. "/comm")
  if comm and comm:read("l") == "sleep" then comm:close() break end
  if comm then comm:close() end
  os.execute("sleep 0.01")
end
-- attached at once, as its dynamic loader starts: its empty link map
-- once made every library look unloaded, and a SIGTRAP of reticle's killed it
s = reticle.session_create{ collectors = { "fcount" }, output = ctx.work .. "/attach.db" }
reticle.session_attach(s, sleeper, 0)
local ticks = 0
reticle.session_on_tick(s, 0.1, function(sess)
  ticks = ticks + 1
  if ticks == 3 then reticle.session_stop(sess) end
end)
assert(reticle.session_run(s) == 0)
reticle.session_destroy(s)
assert(ticks >= 3)
local state = sh("ps -o stat= -p " .. sleeper)
assert(state:match("^S"), "the attached process is not sleeping on: " .. state)
os.execute("kill " .. sleeper)

-- errors name their entry
raises("session_create", reticle.session_create, { collectors = { "no-such" } })
raises("session_create", reticle.session_create, { collectors = { "fcount" }, from = "tomorrow" })
s = reticle.session_create{ collectors = { "fcount" }, output = ctx.work .. "/none.db" }
raises("session_launch", reticle.session_launch, s, { ctx.work .. "/does-not-exist" })
raises("session_attach", reticle.session_attach, s, 999999999)
raises("session_on_tick", reticle.session_on_tick, s, 0.001, function() end)
reticle.session_destroy(s)
