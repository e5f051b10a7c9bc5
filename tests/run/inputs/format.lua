local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
local t = {} for i = 1, 60000 do t[i] = (i * 7919) % 100003 end
table.sort(t)
local s = {} for i = 1, 20000 do s[#s+1] = tostring(i) .. "x" end
print(fib(22), t[1000], #table.concat(s), string.format("%5.2f", 3.14159), ("abc"):rep(3):upper())
