-- Runs the part scripts api_*.lua given on the command line with every
-- function of the module wrapped to record that it was called, then
-- writes what the module has and what was called (check_api.py reads it).
--   reticle script api.lua WORK SOURCE BUILD OUT PART.lua...
local work, source, build, out = arg[1], arg[2], arg[3], arg[4]
local called = {}
local wrapped = {}
for name, fn in pairs(reticle) do
  if type(fn) == "function" then
    wrapped[name] = function(...)
      called[name] = true
      return fn(...)
    end
  end
end
for name, fn in pairs(wrapped) do reticle[name] = fn end
local ctx = { work = work, source = source, build = build }
local failed = 0
for i = 5, #arg do
  local chunk = assert(loadfile(arg[i]))
  local ok, err = pcall(chunk, ctx)
  if ok then
    print("ok   " .. arg[i])
  else
    failed = failed + 1
    print("FAIL " .. arg[i] .. ": " .. tostring(err))
  end
end
local f = assert(io.open(out, "w"))
for name in pairs(wrapped) do f:write("has ", name, "\n") end
for name in pairs(called) do f:write("called ", name, "\n") end
f:close()
os.exit(failed == 0 and 0 or 1)
