-- Samples a long-running process for a few seconds every minute (or any
-- period), and prints where its time went each time, without stopping it:
--
--   reticle script examples/scripts/sample_every.lua PID [EVERY=60] [FOR=5] [ROUNDS=0] [TOP=5]
--
-- Each round attaches (reticle attach: perf_event, no ptrace) for FOR
-- seconds, then lists the TOP functions by their share of the time
-- sampled. ROUNDS 0 goes on until the process ends.
local pid = tonumber(arg[1])
local every, span = tonumber(arg[2] or 60), tonumber(arg[3] or 5)
local rounds, top = tonumber(arg[4] or 0), tonumber(arg[5] or 5)
if not pid or not every or not span or span <= 0 or every < span then
  error("usage: reticle script sample_every.lua PID [EVERY=60] [FOR=5] [ROUNDS=0] [TOP=5]")
end

local dir = os.getenv("TMPDIR") or "/tmp"
local round = 0
while rounds == 0 or round < rounds do
  round = round + 1
  local started = os.time()
  local out = string.format("%s/sample_every.%d.%d.db", dir, pid, round)
  local status = reticle.attach{ pid = pid, duration = span, output = out }
  if status ~= 0 then
    print(string.format("round %d: process %d is gone (attach exit status %d)", round, pid, status))
    break
  end
  local p = reticle.open(out)
  local rows, total = p:samples(), 0
  for _, f in ipairs(rows) do total = total + f.seconds end
  print(string.format("round %d (%s): %.3f s sampled", round, os.date("%H:%M:%S", started), total))
  for i = 1, math.min(top, #rows) do
    local f = rows[i]
    print(string.format("  %6.2f%%  %s (%s)", total > 0 and 100 * f.seconds / total or 0, f.name,
                        f.module:match("[^/]*$")))
  end
  p:close()
  os.remove(out)
  if rounds ~= 0 and round >= rounds then break end
  local wait = every - span
  if wait > 0 then os.execute(string.format("sleep %g", wait)) end
end
