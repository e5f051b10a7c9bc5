/* Relocates C++ functions of this test program that throw, catch and clean
 * up into a buffer near it (as test_relocate.c does), builds unwind
 * information for each copy with unw_build(), registers it with libgcc's
 * __register_frame(), and checks that exceptions thrown through the copies
 * end exactly as they do through the originals (the oracle): same handler,
 * same value, same destructors run. backtrace() from inside a copy must walk
 * as many frames as from inside the original. A forked child first shows the
 * test can fail: without registration the same throw calls std::terminate. */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <stdexcept>
#include <string>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <link.h>
extern "C" {
#include <reticle/binary.h>
#include "isa/x86_64/relocate.h"
#include "unwind/unwind.h"
}
#include "check.h"

extern "C" void __register_frame(void *);
extern "C" void __deregister_frame(void *);
/* The variant that takes the object's storage: no malloc in the call (what
 * an inferior call into a stopped process wants). 64 bytes cover libgcc's
 * struct object (7 words in gcc 12). */
extern "C" void __register_frame_info(const void *, void *);
extern "C" void *__deregister_frame_info(const void *);

static volatile int dtors;   /* destructors run on unwind paths */
struct Guard {
	int w;
	explicit Guard(int weight) : w(weight) {}
	~Guard() { dtors += w; }
};

__attribute__((noinline)) int thrower(int x)
{
	if (x == 1)
		throw std::runtime_error("one");
	if (x == 2)
		throw 40 + x;
	if (x == 3)
		throw std::string("three");
	return x * 10;
}

/* A destructor on the unwind path, no handler: a cleanup landing pad. */
__attribute__((noinline)) int cleanup_only(int x)
{
	Guard g(1);
	int r = thrower(x);
	return r + (int)dtors;
}

/* Typed catches; the string escapes to the caller. */
__attribute__((noinline)) int typed_catch(int x)
{
	Guard g(10);
	try {
		return cleanup_only(x) + 1;
	} catch (const std::runtime_error &e) {
		return -1000 - (int)strlen(e.what());
	} catch (int v) {
		return -2000 - v;
	}
}

__attribute__((noinline)) int catch_all(int x)
{
	Guard g(100);
	try {
		return typed_catch(x);
	} catch (...) {
		return -3000;
	}
}

/* Handlers inside the function itself (no .cold split): the catch code,
 * a rethrow and a nested try run in the relocated copy. */
__attribute__((noinline, optimize("no-reorder-blocks-and-partition"))) int in_place(int x)
{
	Guard g(1000);
	try {
		try {
			return thrower(x);
		} catch (int v) {
			if (v == 42)
				throw;   /* rethrown out of the copy's handler */
			return -4000;
		}
	} catch (const std::exception &e) {
		return -5000 - (int)strlen(e.what());
	}
}

static int bt_depth;
__attribute__((noinline)) void record_backtrace(void)
{
	void *frames[128];
	bt_depth = backtrace(frames, 128);
}

__attribute__((noinline)) int bt_fn(int x)
{
	volatile int pad[8];
	pad[x & 7] = x;
	record_backtrace();
	return pad[x & 7] + 1;
}

/* A leaf whose block at 1: reads the flags set before it: the relocator puts
 * a counter there that saves the flags and moves %rsp (keep_flags). */
asm(".text\n"
    ".globl kf_fn\n"
    ".type kf_fn, @function\n"
    "kf_fn:\n"
    ".cfi_startproc\n"
    "push %rbx\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset %rbx, -16\n"
    "mov %edi, %ebx\n"
    "cmp $5, %edi\n"
    "jmp 1f\n"
    "1: jl 2f\n"
    "add $100, %ebx\n"
    "2: mov %ebx, %eax\n"
    "pop %rbx\n"
    ".cfi_def_cfa_offset 8\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size kf_fn, .-kf_fn\n");
extern "C" int kf_fn(int);

typedef int (*fn_t)(int);

/* ---- relocation, as in test_relocate.c ---- */

static uint8_t *area;
static size_t counters_used;
enum { AREA = 1 << 20, CODE = AREA / 2 };

struct moved {
	fn_t orig, copy;
	struct x86_reloc r;
};
static struct moved moved[8];
static size_t nmoved;

static int read_mem(void *, const uint64_t addr, void *buf, size_t len)
{
	memcpy(buf, (const void *)addr, len);
	return 0;
}

/* Calls to a function relocated earlier go to its copy. */
static uint64_t redirect(void *, uint64_t addr)
{
	for (size_t i = 0; i < nmoved; i++)
		if ((uint64_t)moved[i].orig == addr)
			return (uint64_t)moved[i].copy;
	return addr;
}

static uint64_t new_counter(void *)
{
	if (counters_used + 8 > AREA - CODE)
		return 0;
	uint64_t a = (uint64_t)(area + CODE + counters_used);
	counters_used += 8;
	return a;
}

static uint64_t bias;
static rtl_binary *self;

static int first_module(struct dl_phdr_info *info, size_t, void *)
{
	bias = info->dlpi_addr;
	return 1;
}

static fn_t relocate(fn_t fn, uint64_t *dest)
{
	const rtl_function *f = rtl_binary_find_function(self, (uint64_t)fn - bias);
	if (!f || f->addr + bias != (uint64_t)fn)
		return NULL;
	struct moved *m = &moved[nmoved];
	struct x86_reloc_env env;
	memset(&env, 0, sizeof(env));
	env.addr = (uint64_t)fn;
	env.size = f->size;
	env.code = (const uint8_t *)fn;
	env.read = read_mem;
	env.redirect = redirect;
	env.new_counter = new_counter;
	env.entry_counter = env.block_counters = true;
	const char *reason;
	if (x86_relocate(&env, *dest, &m->r, &reason)) {
		fprintf(stderr, "relocate failed: %s\n", reason ? reason : "?");
		return NULL;
	}
	memcpy((void *)*dest, m->r.w.buf, m->r.w.len);
	m->orig = fn;
	m->copy = (fn_t)*dest;
	*dest += (m->r.w.len + 15) & ~15ul;
	nmoved++;
	return m->copy;
}

/* Reads the blob back as an .eh_frame of its own: its FDE must cover the
 * copy, and rebuilding it through the identity map must give the same bytes
 * (the reader decodes what the writer encodes, pcrel or absolute). */
static void check_round_trip(size_t i, const uint8_t *blob, size_t len, uint64_t at)
{
	const struct x86_reloc *r = &moved[i].r;
	struct unw_image own;
	memset(&own, 0, sizeof(own));
	own.eh_frame.addr = at;
	own.eh_frame.data = blob;
	own.eh_frame.size = len;
	struct unw_fde fde;
	CHECK_EQ(unw_find_fde(&own, r->w.base + r->w.len - 1, &fde), 0);
	CHECK(fde.pc_begin == r->w.base && fde.pc_end == r->w.base + r->w.len);
	CHECK(fde.lsda == 0 || (fde.lsda > at && fde.lsda < at + len));
	/* every byte maps to itself; no %rsp moves given: their rows are in the blob */
	uint64_t *every = (uint64_t *)malloc(r->w.len * sizeof(uint64_t));
	for (size_t b = 0; b < r->w.len; b++)
		every[b] = r->w.base + b;
	struct unw_map id = { every, every, r->w.len, r->w.base, r->w.len, r->w.base, r->w.len, NULL, 0 };
	uint8_t *again;
	size_t len2;
	const char *reason;
	CHECK_EQ(unw_build(&own, &id, at, &again, &len2, &reason), 0);
	CHECK(len2 == len && memcmp(again, blob, len) == 0);
	free(again);
	free(every);
}

/* Builds the unwind blob of moved[i] at *DEST; returns its address. */
static void *build_blob(const struct unw_image *img, size_t i, uint64_t *dest)
{
	const struct x86_reloc *r = &moved[i].r;
	const rtl_function *f = rtl_binary_find_function(self, (uint64_t)moved[i].orig - bias);
	struct unw_map map = { r->map_from, r->map_to, r->nmap, (uint64_t)moved[i].orig, f->size,
			       r->w.base, r->w.len, r->w.rows, r->w.nrows };
	uint8_t *blob;
	size_t len;
	const char *reason;
	int err = unw_build(img, &map, *dest, &blob, &len, &reason);
	if (err) {
		fprintf(stderr, "unw_build failed: %d %s\n", err, reason);
		return NULL;
	}
	check_round_trip(i, blob, len, *dest);
	void *at = (void *)*dest;
	memcpy(at, blob, len);
	free(blob);
	*dest += (len + 15) & ~15ul;
	return at;
}

/* How a call ended, seen from a handler in main (the original code). */
struct outcome {
	int ret, dtors, escaped;   /* escaped: 0 returned, 1 runtime_error, 2 int, 3 string */
};

static struct outcome run(fn_t fn, int x)
{
	struct outcome o = { 0, 0, 0 };
	dtors = 0;
	try {
		o.ret = fn(x);
	} catch (const std::runtime_error &e) {
		o.escaped = 1;
		o.ret = (int)strlen(e.what());
	} catch (int v) {
		o.escaped = 2;
		o.ret = v;
	} catch (const std::string &s) {
		o.escaped = 3;
		o.ret = (int)s.size();
	}
	o.dtors = dtors;
	return o;
}

/* Child: calls the copy of catch_all with no unwind info registered. It must
 * die in std::terminate (SIGABRT): proof that the registration is what makes
 * the parent's checks pass. Also reports a short backtrace through bt_fn. */
static void control_without_registration(fn_t catch_all2, fn_t bt2, int oracle_depth)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 2);
		bt2(1);
		if (bt_depth == oracle_depth)
			_exit(3);
		catch_all2(1);
		_exit(0);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

/* Damaged .eh_frame and .gcc_except_table bytes (one byte changed, or the
 * section cut short) must be refused or survived, never crash or hang. */
static void damaged_input(const struct unw_image *img, size_t i)
{
	const struct x86_reloc *r = &moved[i].r;
	const rtl_function *f = rtl_binary_find_function(self, (uint64_t)moved[i].orig - bias);
	struct unw_map map = { r->map_from, r->map_to, r->nmap, (uint64_t)moved[i].orig, f->size,
			       r->w.base, r->w.len, r->w.rows, r->w.nrows };
	struct unw_fde fde;
	if (unw_find_fde(img, map.func_addr, &fde))
		return;
	uint8_t *eh = (uint8_t *)malloc(img->eh_frame.size);
	uint8_t *ex = (uint8_t *)malloc(img->except_table.size + 1);
	unsigned seed = 12345;
	int built = 0;
	for (int round = 0; round < 3000; round++) {
		struct unw_image bad = *img;
		memcpy(eh, img->eh_frame.data, img->eh_frame.size);
		memcpy(ex, img->except_table.data, img->except_table.size);
		bad.eh_frame.data = eh;
		bad.except_table.data = ex;
		if (round & 1) {                /* half of them walk the section */
			bad.index = NULL;
			bad.nindex = 0;
		}
		seed = seed * 1103515245 + 12345;
		unsigned which = (seed >> 8) % 4, val = (seed >> 16) & 0xff;
		if (which == 0 && fde.lsda) {   /* a byte of the LSDA */
			size_t at = fde.lsda - img->except_table.addr + (seed >> 24) % 24;
			if (at < img->except_table.size)
				ex[at] = (uint8_t)val;
		} else if (which == 1) {        /* a byte of the FDE */
			eh[fde.fde_off + (seed >> 24) % 32] = (uint8_t)val;
		} else if (which == 2) {        /* a byte of the CIE */
			eh[fde.cie_off + (seed >> 24) % 32] = (uint8_t)val;
		} else {                        /* the section cut inside the FDE */
			bad.eh_frame.size = fde.fde_off + (seed >> 24) % 40;
		}
		uint8_t *blob = NULL;
		size_t len;
		built += unw_build(&bad, &map, (uint64_t)area, &blob, &len, NULL) == 0;
		free(blob);
	}
	CHECK(built > 0 && built < 3000);
	free(eh);
	free(ex);
}

/* Single-stepping (the trap flag) through a function: at every instruction
 * inside [lo, hi) the handler walks the stack with backtrace(). Exact CFI
 * gives the same depth everywhere, in prologue, body, counters and epilogue. */
static struct {
	volatile uint64_t lo, hi, seq;   /* traced range, a keep_flags counter in it */
	volatile int inside, min, max, steps, in_seq;
} trace;

static void on_trap(int, siginfo_t *, void *ucv)
{
	ucontext_t *uc = (ucontext_t *)ucv;
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (pc >= trace.lo && pc < trace.hi) {
		void *frames[64];
		int d = backtrace(frames, 64);
		trace.min = d < trace.min ? d : trace.min;
		trace.max = d > trace.max ? d : trace.max;
		trace.steps++;
		trace.in_seq += pc > trace.seq && pc < trace.seq + 33;
		trace.inside = 1;
	} else if (trace.inside) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100ll;   /* back in the caller */
		trace.inside = 0;
	}
}

__attribute__((noinline)) static void traced(fn_t fn, uint64_t lo, uint64_t hi, uint64_t seq)
{
	trace.lo = lo;
	trace.hi = hi;
	trace.seq = seq;
	trace.min = 1 << 30;
	trace.max = -1;
	trace.steps = trace.in_seq = trace.inside = 0;
	asm volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory", "cc");
	fn(1);
	asm volatile("pushfq; andq $~0x100, (%%rsp); popfq" ::: "memory", "cc");
}

/* The keep_flags counter sequence in the copy R, or 0. */
static uint64_t find_flag_counter(const struct x86_reloc *r)
{
	/* the switchable form: a 2-byte nop, then lea rsp,[rsp-128]; push rax */
	static const uint8_t lea_down_push[] = { 0x66, 0x90, 0x48, 0x8d, 0x64, 0x24, 0x80, 0x50 };
	for (size_t k = 0; k < r->nmap; k++) {
		const uint8_t *p = r->w.buf + (r->map_to[k] - r->w.base);
		if (!memcmp(p, lea_down_push, sizeof(lea_down_push)))
			return r->map_to[k];
	}
	return 0;
}

static void check_stepping(fn_t kf_copy, const struct x86_reloc *r)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	const rtl_function *f = rtl_binary_find_function(self, (uint64_t)kf_fn - bias);
	traced(kf_fn, (uint64_t)kf_fn, (uint64_t)kf_fn + f->size, 0);
	int want = trace.min;
	CHECK(trace.steps >= 6);
	CHECK_EQ(trace.max, want);
	uint64_t seq = find_flag_counter(r);
	CHECK(seq != 0);
	traced(kf_copy, r->w.base, r->w.base + r->w.len, seq);
	CHECK(trace.steps > 12);
	CHECK(trace.in_seq >= 6);      /* stopped inside the counter that moves %rsp */
	CHECK_EQ(trace.min, want);
	CHECK_EQ(trace.max, want);
	signal(SIGTRAP, SIG_DFL);
}

/* The same CIE as version 3 (the return register is a uleb128 there; 16
 * reads the same either way) gives the same blob but for the version. */
static void cie_version_3(const struct unw_image *img, size_t i)
{
	const struct x86_reloc *r = &moved[i].r;
	const rtl_function *f = rtl_binary_find_function(self, (uint64_t)moved[i].orig - bias);
	struct unw_map map = { r->map_from, r->map_to, r->nmap, (uint64_t)moved[i].orig, f->size,
			       r->w.base, r->w.len, r->w.rows, r->w.nrows };
	struct unw_fde fde;
	CHECK_EQ(unw_find_fde(img, map.func_addr, &fde), 0);
	uint8_t *eh = (uint8_t *)malloc(img->eh_frame.size);
	memcpy(eh, img->eh_frame.data, img->eh_frame.size);
	size_t version_at = fde.cie_off + 8;   /* after length and CIE id */
	CHECK_EQ(eh[version_at], 1);
	eh[version_at] = 3;
	struct unw_image v3 = *img;
	v3.eh_frame.data = eh;
	uint8_t *a, *b;
	size_t alen, blen;
	CHECK_EQ(unw_build(img, &map, (uint64_t)area, &a, &alen, NULL), 0);
	CHECK_EQ(unw_build(&v3, &map, (uint64_t)area, &b, &blen, NULL), 0);
	CHECK(alen == blen && a[8] == 1 && b[8] == 3);
	if (alen == blen) {
		b[8] = 1;
		CHECK(memcmp(a, b, alen) == 0);
	}
	free(a);
	free(b);
	free(eh);
}

static const int inputs[] = { 0, 1, 2, 3, 5 };
enum { NIN = sizeof(inputs) / sizeof(inputs[0]), NFN = 5 };

/* Every relocated function on every input ends as its original did. */
static void compare_all(struct outcome want[NFN][NIN])
{
	for (int f = 0; f < NFN; f++)
		for (int k = 0; k < NIN; k++) {
			struct outcome got = run(moved[f].copy, inputs[k]);
			if (got.ret != want[f][k].ret || got.dtors != want[f][k].dtors ||
			    got.escaped != want[f][k].escaped) {
				fprintf(stderr, "function %d input %d: copy (%d, %d, %d) original (%d, %d, %d)\n",
					f, inputs[k], got.ret, got.dtors, got.escaped, want[f][k].ret,
					want[f][k].dtors, want[f][k].escaped);
				check_failures++;
			}
		}
}

int main(void)
{
	dl_iterate_phdr(first_module, NULL);
	CHECK(rtl_binary_open("/proc/self/exe", &self) == 0);
	struct unw_image img;
	CHECK(unw_image_load("/proc/self/exe", bias, &img) == 0);
	uintptr_t hint = ((uintptr_t)(void *)thrower - (64u << 20)) & ~0xffffful;
	area = (uint8_t *)mmap((void *)hint, AREA, PROT_READ | PROT_WRITE | PROT_EXEC,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(area != MAP_FAILED);
	if (area == MAP_FAILED || !self)
		return CHECK_DONE();

	/* the oracle: the originals, before anything is relocated */
	fn_t order[] = { thrower, cleanup_only, typed_catch, catch_all, in_place, bt_fn, kf_fn };
	struct outcome want[NFN][NIN];
	int escapes = 0;
	for (int f = 0; f < NFN; f++)
		for (int k = 0; k < NIN; k++) {
			want[f][k] = run(order[f], inputs[k]);
			escapes += want[f][k].escaped != 0;
		}
	CHECK(escapes >= 8);   /* the oracle itself exercises throws */
	fn_t volatile bt_orig = bt_fn;
	bt_orig(1);
	int depth = bt_depth;
	CHECK(depth >= 3);

	/* callees first, so that callers' direct calls reach the copies */
	uint64_t dest = (uint64_t)area;
	for (fn_t fn : order)
		CHECK(relocate(fn, &dest) != NULL);
	if (nmoved != NFN + 2)
		return CHECK_DONE();
	fn_t catch_all2 = moved[3].copy, bt2 = moved[NFN].copy;

	void *blobs[NFN + 2];
	for (size_t i = 0; i < nmoved; i++)
		CHECK((blobs[i] = build_blob(&img, i, &dest)) != NULL);
	for (size_t i = 0; i < nmoved; i++)
		if (!blobs[i])
			return CHECK_DONE();

	control_without_registration(catch_all2, bt2, depth);

	for (size_t i = 0; i < nmoved; i++)
		__register_frame(blobs[i]);

	compare_all(want);
	/* each copy ran: thrower's copy is reached from every relocated caller */
	CHECK(*(uint64_t *)moved[0].r.entry_counter >= (uint64_t)(NFN * NIN));

	bt_depth = 0;
	bt2(1);
	CHECK_EQ(bt_depth, depth);
	check_stepping(moved[NFN + 1].copy, &moved[NFN + 1].r);

	/* The same with the blobs far from the code (the kernel's choice of
	 * address, terabytes away from a PIE): absolute FDE and personality
	 * pointers instead of pcrel ones. */
	for (size_t i = 0; i < nmoved; i++)
		__deregister_frame(blobs[i]);
	uint8_t *far = (uint8_t *)mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(far != MAP_FAILED);
	int64_t dist = (int64_t)((uint64_t)far - (uint64_t)area);
	CHECK(dist != (int32_t)dist);
	uint64_t fdest = (uint64_t)far;
	for (size_t i = 0; i < nmoved; i++)
		CHECK((blobs[i] = build_blob(&img, i, &fdest)) != NULL);
	for (size_t i = 0; i < nmoved; i++)
		if (blobs[i])
			__register_frame(blobs[i]);
	compare_all(want);
	bt_depth = 0;
	bt2(1);
	CHECK_EQ(bt_depth, depth);
	for (size_t i = 0; i < nmoved; i++)
		if (blobs[i])
			__deregister_frame(blobs[i]);

	damaged_input(&img, 2);   /* typed_catch: CIE with P and L, an LSDA with types */
	cie_version_3(&img, 2);

	/* All of them in one blob (unw_build_many), plus a function without an
	 * FDE that must be left out, registered with one call. */
	struct unw_map maps[NFN + 3];
	for (size_t i = 0; i < nmoved; i++) {
		const struct x86_reloc *r = &moved[i].r;
		const rtl_function *f = rtl_binary_find_function(self, (uint64_t)moved[i].orig - bias);
		maps[i] = (struct unw_map){ r->map_from, r->map_to, r->nmap, (uint64_t)moved[i].orig,
					    f->size, r->w.base, r->w.len, r->w.rows, r->w.nrows };
	}
	maps[nmoved] = maps[0];
	maps[nmoved].func_addr = (uint64_t)area;   /* no FDE there */
	int status[NFN + 3];
	uint8_t *many;
	size_t many_len;
	CHECK_EQ(unw_build_many(&img, maps, nmoved + 1, dest, &many, &many_len, status), 0);
	for (size_t i = 0; i < nmoved; i++)
		CHECK_EQ(status[i], 0);
	CHECK_EQ(status[nmoved], -ENOENT);
	memcpy((void *)dest, many, many_len);
	free(many);
	__register_frame((void *)dest);
	compare_all(want);
	bt_depth = 0;
	bt2(1);
	CHECK_EQ(bt_depth, depth);
	check_stepping(moved[NFN + 1].copy, &moved[NFN + 1].r);
	__deregister_frame((void *)dest);
	/* again through __register_frame_info with storage next to the blob */
	uint64_t obj = (dest + many_len + 63) & ~63ul;
	memset((void *)obj, 0, 64);
	__register_frame_info((void *)dest, (void *)obj);
	compare_all(want);
	CHECK(__deregister_frame_info((void *)dest) == (void *)obj);

	/* no FDE covers the mmap'd area itself */
	struct unw_fde fde;
	CHECK_EQ(unw_find_fde(&img, (uint64_t)area, &fde), -ENOENT);
	CHECK_EQ(unw_find_fde(&img, (uint64_t)thrower, &fde), 0);
	CHECK(fde.pc_begin == (uint64_t)thrower);
	/* the index and the walk of the section agree */
	struct unw_image walk = img;
	walk.index = NULL;
	walk.nindex = 0;
	CHECK(img.nindex > 10);
	for (size_t i = 0; i < img.nindex; i += 7) {
		uint64_t pc = img.index[i].begin + (img.index[i].end - img.index[i].begin) / 2;
		struct unw_fde a, b;
		CHECK_EQ(unw_find_fde(&img, pc, &a), 0);
		CHECK_EQ(unw_find_fde(&walk, pc, &b), 0);
		CHECK(a.fde_off == b.fde_off && a.lsda == b.lsda && a.pc_end == b.pc_end);
	}

	for (size_t i = 0; i < nmoved; i++)
		x86_reloc_free(&moved[i].r);
	unw_image_free(&img);
	rtl_binary_close(self);
	return CHECK_DONE();
}
