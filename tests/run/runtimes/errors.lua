-- LuaJIT throws Lua errors with _Unwind_RaiseException through its C
-- frames (lj_err_throw); pcall's frame in its VM catches them through the
-- VM's personality routine. Under reticle the frames of the copies must
-- unwind too. A hot loop gets compiled to a trace.
local function fails(n) if n % 3 == 0 then error({code = n}) end return n end
local caught, sum = 0, 0
for i = 1, 300 do
  local ok, e = pcall(fails, i)
  if ok then sum = sum + e else caught = caught + e.code end
end
print("pcall", caught, sum)
print(xpcall(function() local t = nil; return t.x end, function(m) return "handled: " .. m:gsub("^.-:%d+: ", "") end))
local co = coroutine.create(function() coroutine.yield(1); error("in coroutine") end)
print(coroutine.resume(co))
print((select(2, coroutine.resume(co))):gsub("^.-:%d+: ", ""))
print(pcall(string.rep))
local acc = 0
for i = 1, 2000000 do acc = (acc + i * 7) % 1000003 end
print("loop", acc)
local ok, e = pcall(error)
print("nil error", ok, e)
os.exit(3)
