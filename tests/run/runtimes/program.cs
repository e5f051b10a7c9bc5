// Mono: JIT-compiled code and the ahead-of-time image of mscorlib, whose
// calls and PLT entries the runtime patches by reading their bytes and
// whose methods it finds by address (reticle leaves that code alone).
using System;
using System.Collections.Generic;
using System.Threading.Tasks;
class Program {
  static int Fib(int n) => n < 2 ? n : Fib(n - 1) + Fib(n - 2);
  static int Main() {
    Console.WriteLine("fib " + Fib(22));
    int caught = 0;
    for (int i = 0; i < 200; i++) {
      try { if (i % 5 == 0) throw new InvalidOperationException("n" + i); }
      catch (InvalidOperationException e) { caught += e.Message.Length; }
    }
    Console.WriteLine("caught " + caught);
    var d = new Dictionary<string, int>();
    for (int i = 0; i < 50000; i++) d["k" + i] = i;
    Console.WriteLine("dict " + d.Count + " " + d["k777"]);
    var tasks = new List<Task<long>>();
    for (int t = 0; t < 4; t++) {
      int m = t + 2;
      tasks.Add(Task.Run(() => { long s = 0; for (int i = 0; i < 500000; i++) s += i % m; return s; }));
    }
    long total = 0;
    foreach (var t in tasks) total += t.Result;
    Console.WriteLine("tasks " + total);
    GC.Collect();
    return 5;
  }
}
