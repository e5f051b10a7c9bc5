d = {}
for i in range(200000):
    d[str(i)] = i * 3
def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)
print(sum(d.values()), fib(22), len(sorted(d)))
