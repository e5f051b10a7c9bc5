/* Discovered functions kept by warm start (elf/facts.c, warm/facts_cache.c)
 * against discovery itself: on the installed programs and this test, a
 * binary whose functions were adopted from a blob has the same functions
 * (names, entries, sizes, sources), code pointers, FDE count, signal
 * trampolines and lookups as one discovered; the cache file is used on a
 * second open and set aside when a debug file appears for a stripped
 * binary; malformed blobs are refused. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <reticle/binary.h>
#include "check.h"
#include "elf/binary_internal.h"
#include "elf/facts.h"
#include "warm/warm.h"

static __attribute__((noinline)) void same_binary(const rtl_binary *a, const rtl_binary *b, const char *path)
{
	size_t n = rtl_binary_function_count(a);
	CHECK_EQ(rtl_binary_function_count(b), n);
	if (rtl_binary_function_count(b) != n)
		return;
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		const rtl_function *f = rtl_binary_function(a, i), *g = rtl_binary_function(b, i);
		if (f->addr != g->addr || f->size != g->size || f->sources != g->sources ||
		    (!f->name != !g->name) || (f->name && strcmp(f->name, g->name))) {
			if (bad++ < 5)
				fprintf(stderr, "%s: function %zu differs: %s %#llx+%llu / %s %#llx+%llu\n", path, i,
					f->name ? f->name : "-", (unsigned long long)f->addr,
					(unsigned long long)f->size, g->name ? g->name : "-",
					(unsigned long long)g->addr, (unsigned long long)g->size);
			continue;
		}
		/* lookups: the entry, inside, and just past the end */
		uint64_t probes[] = { f->addr, f->addr + f->size / 2, f->addr + f->size };
		for (size_t k = 0; k < 3; k++) {
			const rtl_function *x = rtl_binary_find_function(a, probes[k]);
			const rtl_function *y = rtl_binary_find_function(b, probes[k]);
			if ((x ? x - rtl_binary_function(a, 0) : -1) != (y ? y - rtl_binary_function(b, 0) : -1))
				bad++;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(rtl_binary_code_pointer_count(b), rtl_binary_code_pointer_count(a));
	for (size_t i = 0; i < rtl_binary_code_pointer_count(a) && i < rtl_binary_code_pointer_count(b); i++)
		if (memcmp(rtl_binary_code_pointer(a, i), rtl_binary_code_pointer(b, i), sizeof(rtl_code_pointer)))
			bad++;
	CHECK_EQ(bad, 0);
	CHECK_EQ(rtl_binary_fde_count(b), rtl_binary_fde_count(a));
	CHECK_EQ(b->nsigtramps, a->nsigtramps);
	CHECK(!memcmp(a->sigtramps, b->sigtramps, sizeof(a->sigtramps[0]) * a->nsigtramps));
}

static void release(void *owner) { free(owner); }

/* Discovery, then its blob adopted by the same binary opened bare. */
static void round_trip(const char *path)
{
	rtl_binary *a, *b;
	if (access(path, R_OK) || rtl_binary_open(path, &a))
		return;
	void *blob;
	size_t len;
	CHECK_EQ(rtl_elf_facts_pack(a, &blob, &len), 0);
	CHECK_EQ(rtl_binary_open_image(path, &b), 0);
	/* truncated, or names that do not end: refused */
	CHECK(rtl_elf_facts_adopt(b, blob, len - 8, NULL, NULL) != 0);
	((char *)blob)[len - 1] = 'x';
	CHECK(rtl_elf_facts_adopt(b, blob, len, NULL, NULL) != 0);
	((char *)blob)[len - 1] = 0;
	CHECK_EQ(rtl_elf_facts_adopt(b, blob, len, blob, release), 0);
	same_binary(a, b, path);
	/* checked functions are not discovery's state: not packed */
	if (rtl_binary_function_count(b)) {
		rtl_binary_check_functions(b);
		void *again;
		size_t alen;
		CHECK(rtl_elf_facts_pack(b, &again, &alen) != 0);
	}
	size_t nfuncs = rtl_binary_function_count(a);
	rtl_binary_close(a);
	rtl_binary_close(b);
	printf("%s: %zu functions round-trip (%zu bytes)\n", path, nfuncs, len);
}

static int run(const char *cmd)
{
	int r = system(cmd);
	if (r)
		fprintf(stderr, "failed: %s\n", cmd);
	return r;
}

/* Through the cache: saved on the first open, read on the second, and set
 * aside once a debug file gives a stripped binary its names. */
static void cache(const char *self)
{
	char dir[] = "/tmp/reticle-facts-XXXXXX", cmd[4096], bin[512], facts_glob[700];
	if (!mkdtemp(dir))
		return;
	snprintf(bin, sizeof(bin), "%s/stripped", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --strip-all %s %s && mkdir -p %s/cache %s/debug", self, bin, dir, dir);
	if (run(cmd)) {
		CHECK(!"objcopy");
		return;
	}
	setenv("RETICLE_DEBUG_DIR", dir, 1);   /* its debug/.build-id: empty so far */
	char cdir[600];
	snprintf(cdir, sizeof(cdir), "%s/cache", dir);
	rtl_binary *fresh, *first, *second, *third;
	CHECK_EQ(rtl_binary_open(bin, &fresh), 0);
	CHECK_EQ(warm_open_binary(cdir, bin, &first), 0);
	snprintf(facts_glob, sizeof(facts_glob), "ls %s/*.facts >/dev/null 2>&1", cdir);
	CHECK_EQ(system(facts_glob), 0);   /* saved */
	CHECK_EQ(warm_open_binary(cdir, bin, &second), 0);
	same_binary(fresh, first, bin);
	same_binary(fresh, second, bin);
	/* without .symtab the test's static functions have no names; with
	 * its debug file they do */
	const char *name = "same_binary";
	bool named = false;
	for (size_t i = 0; i < rtl_binary_function_count(second); i++)
		named |= rtl_binary_function(second, i)->name &&
			 !strcmp(rtl_binary_function(second, i)->name, name);
	CHECK(!named);
	char id[160];
	CHECK_EQ(rtl_binary_identity(fresh, id, sizeof(id)), 0);
	CHECK(!strncmp(id, "b-", 2));   /* a build-id */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/.build-id/%.2s && objcopy --only-keep-debug %s %s/.build-id/%.2s/%s.debug",
		 dir, id + 2, self, dir, id + 2, id + 4);
	CHECK_EQ(run(cmd), 0);
	CHECK_EQ(warm_open_binary(cdir, bin, &third), 0);
	named = false;
	for (size_t i = 0; i < rtl_binary_function_count(third); i++)
		named |= rtl_binary_function(third, i)->name &&
			 !strcmp(rtl_binary_function(third, i)->name, name);
	CHECK(named);
	rtl_binary *plain;
	CHECK_EQ(rtl_binary_open(bin, &plain), 0);
	same_binary(plain, third, bin);
	rtl_binary_close(fresh);
	rtl_binary_close(first);
	rtl_binary_close(second);
	rtl_binary_close(third);
	rtl_binary_close(plain);
	unsetenv("RETICLE_DEBUG_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
}

int main(int argc, char **argv)
{
	(void)argc;
	const char *paths[] = {
		argv[0], "/usr/bin/python3.11", "/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/ld-linux-x86-64.so.2", "/usr/bin/lua5.4", "/bin/ls",
		"/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/usr/bin/sqlite3",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++)
		round_trip(paths[i]);
	cache(argv[0]);
	return CHECK_DONE();
}
