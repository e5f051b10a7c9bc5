-- The functions whose instructions per call changed most between two runs
-- of a program (two inputs, two builds...):
--
--   reticle script examples/scripts/ipc_change.lua "./app small" "./app large" [N, 0: all]
--
-- Each command runs under fcount and bbcount; functions are matched by
-- module file name and name, and listed by the relative change of their
-- Ir per call (functions called in both runs only).
local a_cmd, b_cmd, top = arg[1], arg[2], tonumber(arg[3] or 10)
if not a_cmd or not b_cmd then
  error("usage: reticle script ipc_change.lua COMMAND_A COMMAND_B [N]")
end

local function words(s)
  local t = {}
  for w in s:gmatch("%S+") do t[#t + 1] = w end
  return t
end

local dir = os.getenv("TMPDIR") or "/tmp"
local function measure(cmd, tag)
  local out = string.format("%s/ipc_change.%d.%s.db", dir, math.random(1 << 30), tag)
  local status = reticle.run{ program = words(cmd), collect = { "fcount", "bbcount" }, output = out }
  if status ~= 0 then error(cmd .. ": exit status " .. status) end
  local p = reticle.open(out)
  local per = {}
  for _, f in ipairs(p:functions()) do
    if f.calls and f.calls > 0 and f.instrs then
      per[(f.module:match("[^/]*$")) .. " " .. f.name] = { f.instrs / f.calls, f }
    end
  end
  p:close()
  os.remove(out)
  return per
end

local a, b = measure(a_cmd, "a"), measure(b_cmd, "b")
local rows = {}
for key, x in pairs(a) do
  local y = b[key]
  if y then
    rows[#rows + 1] = { key = key, a = x[1], b = y[1], change = (y[1] - x[1]) / x[1] }
  end
end
table.sort(rows, function(p, q)
  if math.abs(p.change) ~= math.abs(q.change) then return math.abs(p.change) > math.abs(q.change) end
  return p.key < q.key
end)
print(string.format("%12s %12s %9s  %s", "Ir/call A", "Ir/call B", "change", "function (module)"))
for i = 1, (top > 0 and math.min(top, #rows) or #rows) do
  local r = rows[i]
  local module, name = r.key:match("^(%S+) (.*)$")
  print(string.format("%12.1f %12.1f %+8.1f%%  %s (%s)", r.a, r.b, 100 * r.change, name, module))
end
