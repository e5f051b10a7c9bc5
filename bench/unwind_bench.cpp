/* Cost of a C++ throw/catch through relocated frames, by how the unwind
 * info is registered. Relocates thrower and catcher (as tests/unit/
 * test_unwind.cpp does), registers their blobs, then adds K other
 * registered functions whose code lies above the copies (libgcc walks the
 * registered objects that start above a PC before it finds the right one):
 * once as K separate __register_frame calls, once as one unw_build_many
 * blob. Prints ns per throw/catch; the original functions are the baseline.
 * usage: bench_unwind [ITERATIONS] */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <link.h>
#include <sys/mman.h>
extern "C" {
#include <reticle/binary.h>
#include "isa/x86_64/relocate.h"
#include "unwind/unwind.h"
}

extern "C" void __register_frame(void *);
extern "C" void __deregister_frame(void *);

__attribute__((noinline)) int thrower(int x)
{
	if (x >= 0)
		throw x;
	return x;
}

__attribute__((noinline)) int catcher(int x)
{
	try {
		return thrower(x);
	} catch (int v) {
		return v + 1;
	}
}

typedef int (*fn_t)(int);
static uint8_t *area;
static size_t used_counters;
enum { AREA = 64 << 20, CODE = 1 << 20 };
static fn_t copies[2];
static fn_t originals[2] = { thrower, catcher };

static int read_mem(void *, const uint64_t a, void *b, size_t n) { memcpy(b, (const void *)a, n); return 0; }
static uint64_t redirect(void *, uint64_t a) { return a == (uint64_t)thrower && copies[0] ? (uint64_t)copies[0] : a; }
static uint64_t counter(void *) { used_counters += 8; return (uint64_t)(area + CODE + used_counters); }

static uint64_t bias;
static int first(struct dl_phdr_info *i, size_t, void *) { bias = i->dlpi_addr; return 1; }

static double time_throws(fn_t fn, long n)
{
	auto t0 = std::chrono::steady_clock::now();
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += fn((int)(i & 7));
	auto t1 = std::chrono::steady_clock::now();
	if (sum < 0)
		printf("?");
	return std::chrono::duration<double, std::nano>(t1 - t0).count() / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	dl_iterate_phdr(first, NULL);
	rtl_binary *self;
	struct unw_image img;
	if (rtl_binary_open("/proc/self/exe", &self) || unw_image_load("/proc/self/exe", bias, &img))
		return 1;
	uintptr_t hint = ((uintptr_t)(void *)thrower - (128u << 20)) & ~0xffffful;
	area = (uint8_t *)mmap((void *)hint, AREA, PROT_READ | PROT_WRITE | PROT_EXEC,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (area == MAP_FAILED)
		return 1;
	uint64_t dest = (uint64_t)area;
	struct x86_reloc r[2];
	struct unw_map maps[2];
	for (int i = 0; i < 2; i++) {
		const rtl_function *f = rtl_binary_find_function(self, (uint64_t)originals[i] - bias);
		struct x86_reloc_env env;
		memset(&env, 0, sizeof(env));
		env.addr = (uint64_t)originals[i];
		env.size = f->size;
		env.code = (const uint8_t *)originals[i];
		env.read = read_mem;
		env.redirect = redirect;
		env.new_counter = counter;
		env.entry_counter = env.block_counters = true;
		const char *why;
		if (x86_relocate(&env, dest, &r[i], &why))
			return 1;
		memcpy((void *)dest, r[i].w.buf, r[i].w.len);
		copies[i] = (fn_t)dest;
		dest += (r[i].w.len + 15) & ~15ul;
		maps[i] = (struct unw_map){ r[i].map_from, r[i].map_to, r[i].nmap, env.addr, f->size,
					    r[i].w.base, r[i].w.len, r[i].w.rows, r[i].w.nrows };
	}
	uint8_t *blob;
	size_t len;
	if (unw_build_many(&img, maps, 2, dest, &blob, &len, NULL))
		return 1;
	memcpy((void *)dest, blob, len);
	free(blob);
	void *own = (void *)dest;
	dest += (len + 15) & ~15ul;
	__register_frame(own);

	time_throws(catcher, n / 4);   /* warm up: first throws allocate and load */
	time_throws(copies[1], n / 4);
	printf("throw/catch, original: %.0f ns\n", time_throws(catcher, n));
	printf("throw/catch, relocated, 1 object registered: %.0f ns\n", time_throws(copies[1], n));

	/* K fake functions above the copies: thrower's map moved up by a stride */
	uint64_t fake_base = (uint64_t)area + 32 * CODE;
	for (size_t k : { (size_t)100, (size_t)1000, (size_t)10000 }) {
		struct unw_map *fm = (struct unw_map *)malloc(k * sizeof(*fm));
		uint64_t **tos = (uint64_t **)malloc(k * sizeof(uint64_t *));
		for (size_t j = 0; j < k; j++) {
			uint64_t shift = fake_base + j * 256 - r[0].w.base;
			tos[j] = (uint64_t *)malloc(r[0].nmap * sizeof(uint64_t));
			for (size_t q = 0; q < r[0].nmap; q++)
				tos[j][q] = r[0].map_to[q] + shift;
			fm[j] = maps[0];
			fm[j].to = tos[j];
			fm[j].new_start += shift;
			fm[j].rows = NULL;
			fm[j].nrows = 0;
		}
		/* separately */
		void **blobs = (void **)malloc(k * sizeof(void *));
		uint64_t d = dest;
		for (size_t j = 0; j < k; j++) {
			if (unw_build(&img, &fm[j], d, &blob, &len, NULL))
				return 1;
			memcpy((void *)d, blob, len);
			free(blob);
			blobs[j] = (void *)d;
			d += (len + 15) & ~15ul;
			__register_frame(blobs[j]);
		}
		double sep = time_throws(copies[1], n);
		for (size_t j = 0; j < k; j++)
			__deregister_frame(blobs[j]);
		/* together */
		if (unw_build_many(&img, fm, k, dest, &blob, &len, NULL))
			return 1;
		memcpy((void *)dest, blob, len);
		free(blob);
		__register_frame((void *)dest);
		double one = time_throws(copies[1], n);
		__deregister_frame((void *)dest);
		printf("throw/catch, relocated, %zu more functions: %.0f ns as %zu objects, %.0f ns as 1 object\n",
		       k, sep, k, one);
		for (size_t j = 0; j < k; j++)
			free(tos[j]);
		free(tos);
		free(fm);
		free(blobs);
	}
	__deregister_frame(own);
	return 0;
}
