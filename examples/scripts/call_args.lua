-- Prints the arguments of the calls of a function where a predicate holds,
-- and its return values: the probe model's slow path (RTL_PRIM_CALL), one
-- trap into reticle per call that passes the predicate, none for the
-- others (the predicate runs inline in the function's copy).
--
--   reticle script examples/scripts/call_args.lua FUNCTION [MIN] [MAX_LINES] -- PROGRAM [ARGS...]
--
-- A call is shown when its first integer argument is at least MIN (any
-- call without MIN); at most MAX_LINES (default 20) lines are printed,
-- then how many calls passed, the sum of their first arguments, and the
-- sum of the function's return values over every call.
local fn, min, max_lines = arg[1], nil, 20
local program, seen_dashes, opts = {}, false, {}
for i = 2, #arg do
  if seen_dashes then program[#program + 1] = arg[i]
  elseif arg[i] == "--" then seen_dashes = true
  else opts[#opts + 1] = tonumber(arg[i]) end
end
min, max_lines = opts[1], opts[2] or 20
if not fn or #program == 0 then
  error("usage: reticle script call_args.lua FUNCTION [MIN] [MAX_LINES] -- PROGRAM [ARGS...]")
end

local R = reticle
local ENTER, LEAVE = 1, 2   -- the snippets' ids
local passed, arg_sum, ret_sum, rets, lines, planned = 0, 0, 0, 0, 0, false
local c = R.collector{
  name = "call_args",
  plan = function(cfg, plan)
    if cfg.name ~= fn then return end
    planned = true    local pred = min and { { operand = R.OPND_ARG, index = 0, cmp = R.CMP_GE, value = min } } or nil
    R.plan_add(plan, R.POINT_ENTRY, cfg.addr, { op = R.PRIM_CALL, id = ENTER, pred = pred })
    for _, b in ipairs(cfg.blocks) do
      if b["end"] == R.END_RETURN then
        R.plan_add(plan, R.POINT_EXIT, b.last, { op = R.PRIM_CALL, id = LEAVE })
      end
    end
  end,
  on_call = function(ev)
    if ev.id == ENTER then
      passed = passed + 1
      arg_sum = arg_sum + ev.args[1]
      if lines < max_lines then
        lines = lines + 1
        print(string.format("%s(%d, %d, %d) in thread %d", ev.name, ev.args[1], ev.args[2], ev.args[3], ev.tid))
      end
    elseif ev.id == LEAVE then
      rets = rets + 1
      ret_sum = ret_sum + ev.retval
    end
  end,
}
local dir = os.getenv("TMPDIR") or "/tmp"
local out = string.format("%s/call_args.%d.db", dir, math.random(1 << 30))
local s = R.session_create{ collectors = { c }, output = out }
R.session_launch(s, program)
local status = R.session_run(s)
R.session_destroy(s)
os.remove(out)
if not planned then
  io.stderr:write(string.format("call_args: no function named %s ran (reticle functions PROGRAM lists them)\n", fn))
end
print(string.format("call_args: %d calls of %s passed, their first arguments sum to %d; %d returns, values sum to %d",
  passed, fn, arg_sum, rets, ret_sum))
os.exit(status)
