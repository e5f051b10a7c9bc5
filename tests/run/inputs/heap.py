# Many small and mid-sized objects made and freed: malloc's bins, frees
# that merge chunks (run.libc_hot_ir.python3)
import json, re
d = {}
for i in range(40000):
    d[str(i)] = [i] * (i % 7)
s = json.dumps(d)
print(len(s), len(re.findall(r'"\d+5"', s)), len(sorted(d, key=lambda k: -len(d[k]))))
