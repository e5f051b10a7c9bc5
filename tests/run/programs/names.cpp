// C++ names for the demangling test (tests/run/demangle.py): namespaces,
// templates, operators, constructors, lambdas, overloads; each kept out of
// line so that it is a function of its own.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#define KEEP __attribute__((noinline))

namespace geo {
template <typename T> struct Vec {
	T x, y;
	KEEP Vec(T a, T b) : x(a), y(b) {}
	KEEP Vec operator+(const Vec &o) const { return Vec(x + o.x, y + o.y); }
	KEEP bool operator<(const Vec &o) const { return x < o.x || (x == o.x && y < o.y); }
	KEEP T dot(const Vec &o) const { return x * o.x + y * o.y; }
};
namespace detail {
KEEP long scale(long v, int k) { return v * k; }
KEEP double scale(double v, int k) { return v * k; }
}
}

template <typename C, typename F> KEEP long fold(const C &c, F f)
{
	long s = 0;
	for (const auto &e : c)
		s = f(s, e);
	return s;
}

KEEP static std::string label(int i) { return "n" + std::to_string(i); }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 300;
	std::vector<geo::Vec<long>> vi;
	std::map<std::string, geo::Vec<double>> named;
	for (int i = 0; i < n; i++) {
		vi.push_back(geo::Vec<long>(i, n - i) + geo::Vec<long>(1, 1));
		named.emplace(label(i), geo::Vec<double>(i * 0.5, i * 0.25));
	}
	long dots = fold(vi, [](long s, const geo::Vec<long> &v) { return s + v.dot(v); });
	double sum = 0;
	for (auto &kv : named)
		sum += kv.second.dot(kv.second) + geo::detail::scale(kv.second.x, 2);
	int less = 0;
	for (size_t i = 1; i < vi.size(); i++)
		less += vi[i] < vi[i - 1];
	printf("%ld %.2f %d %ld\n", dots, sum, less, geo::detail::scale((long)n, 3));
	return 0;
}
