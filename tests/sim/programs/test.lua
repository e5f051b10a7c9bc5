-- Exercises Lua 5.4 (tables, sort, patterns, string.format with floats,
-- recursion, coroutines, pcall, os.exit) for tests/sim/lua.sh.
local t = {}
for i = 1, 2000 do t[i] = (i * 7919) % 1000 end
table.sort(t)
local s = 0
for _, v in ipairs(t) do s = s + v end
print("sum", s, "median", t[1000])
local words = {}
for w in ("the quick brown fox jumps over the lazy dog the end"):gmatch("%a+") do words[w] = (words[w] or 0) + 1 end
local keys = {}
for k in pairs(words) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do io.write(k, "=", words[k], " ") end
print()
print(string.format("%.6f %g %d", math.pi * 1e3, 2^0.5, math.floor(-3.5)))
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print("fib", fib(24))
print(("x"):rep(5), #arg, arg[1])
local co = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
print(co(), co(), co())
print(pcall(error, "boom"))
os.exit(7)
