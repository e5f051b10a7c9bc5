-- Measures a program until a function is first called, and prints where
-- its instructions went up to then: start-up before main's real work, a
-- server before it accepts its first request, a build step before it
-- writes its output.
--
--   reticle script examples/scripts/until_call.lua FUNCTION [TOP=10] -- PROGRAM [ARGS...]
--
-- The program runs to its end; counting stops at FUNCTION's first call in
-- each process (exact in the thread that calls it: the span of
-- `reticle run --to call:FUNCTION`). Prints Ir and calls per function,
-- then writes the rows as `until_call: TOTAL Ir before FUNCTION`.
local fn, top = arg[1], tonumber(arg[2] ~= "--" and arg[2] or 10)
local program = {}
local seen_dashes = false
for i = 2, #arg do
  if seen_dashes then program[#program + 1] = arg[i] end
  if arg[i] == "--" then seen_dashes = true end
end
if not fn or not top or #program == 0 then
  error("usage: reticle script until_call.lua FUNCTION [TOP] -- PROGRAM [ARGS...]")
end

local dir = os.getenv("TMPDIR") or "/tmp"
local out = string.format("%s/until_call.%d.db", dir, math.random(1 << 30))
local rows = {}
local s = reticle.session_create{ collectors = { "fcount", "bbcount" }, output = out, to = "call:" .. fn }
reticle.session_launch(s, program)
local status = reticle.session_run(s)
reticle.session_destroy(s)

local p = reticle.open(out)
local total, reached = 0, false
for _, f in ipairs(p:functions(true)) do
  if f.name == fn then reached = true end   -- relocated at its first call, and only then
  if (f.instrs or 0) > 0 then
    rows[#rows + 1] = f
    total = total + f.instrs
  end
end
p:close()
os.remove(out)
table.sort(rows, function(a, b)
  if a.instrs ~= b.instrs then return a.instrs > b.instrs end
  return a.name < b.name
end)
print(string.format("%12s %10s  %s", "Ir", "calls", "function (module)"))
for i = 1, math.min(top > 0 and top or #rows, #rows) do
  local f = rows[i]
  print(string.format("%12d %10d  %s (%s)", f.instrs, f.calls or 0, f.name, f.module:match("[^/]*$")))
end
print(string.format("until_call: %d Ir before %s%s (program exit status %d)", total, fn,
                    reached and "" or " (never called: the whole run)", status))
