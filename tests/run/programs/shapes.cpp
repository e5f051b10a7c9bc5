// C++ the oracles must read as callgrind does: g++ -O2 puts main.cold
// before main (callgrind charges it to main), the complete and base
// destructors share an address (D1Ev, D2Ev), and exceptions, virtual
// calls, std::sort and std::map run under it. Deterministic: its own
// generator. Usage: shapes [N [any: exit status errs%7]].
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Shape {
  virtual ~Shape() {}
  virtual double area() const = 0;
  virtual const char *name() const = 0;
};
struct Sq : Shape {
  double s; explicit Sq(double s) : s(s) {}
  double area() const override { return s * s; }
  const char *name() const override { return "sq"; }
};
struct Rect : Shape {
  double w, h; Rect(double w, double h) : w(w), h(h) {}
  double area() const override { return w * h; }
  const char *name() const override { return "rect"; }
};
struct Tri : Shape {
  double b, h; Tri(double b, double h) : b(b), h(h) {}
  double area() const override {
    if (b > 90) throw std::runtime_error("too wide");
    return 0.5 * b * h;
  }
  const char *name() const override { return "tri"; }
};

static unsigned seed = 12345;
static unsigned rnd() { seed = seed * 1103515245u + 12345u; return (seed >> 8) & 0xffff; }

__attribute__((noinline)) static int checked(int v) {
  if (v % 97 == 0) throw std::invalid_argument(std::to_string(v));
  return v * 3;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  std::vector<std::unique_ptr<Shape>> v;
  for (int i = 0; i < n; i++) {
    unsigned r = rnd();
    switch (r % 3) {
    case 0: v.emplace_back(new Sq(r % 50)); break;
    case 1: v.emplace_back(new Rect(r % 40, r % 17)); break;
    default: v.emplace_back(new Tri(r % 100, r % 13)); break;
    }
  }
  double total = 0; int errs = 0;
  for (auto &s : v) {
    try { total += s->area(); } catch (const std::exception &e) { errs++; }
  }
  std::sort(v.begin(), v.end(), [](const std::unique_ptr<Shape> &a, const std::unique_ptr<Shape> &b) {
    double x, y;
    try { x = a->area(); } catch (...) { x = 1e9; }
    try { y = b->area(); } catch (...) { y = 1e9; }
    return x < y;
  });
  std::map<std::string, int> counts;
  for (auto &s : v) counts[s->name()]++;
  long sum = 0; int bad = 0;
  for (int i = 0; i < n; i++) {
    try { sum += checked(i); } catch (const std::invalid_argument &e) { bad++; }
  }
  std::vector<int> ints;
  for (int i = 0; i < n; i++) ints.push_back(rnd());
  std::stable_sort(ints.begin(), ints.end());
  std::printf("total %.1f errs %d sum %ld bad %d first %s last %s median %d\n", total, errs, sum, bad,
              v.front()->name(), v.back()->name(), ints[n / 2]);
  for (auto &kv : counts) std::printf("%s %d\n", kv.first.c_str(), kv.second);
  return argc > 2 ? errs % 7 : 0;
}
