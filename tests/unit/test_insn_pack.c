/* The packed form warm start keeps on disk (x86_pack/x86_unpack) gives back
 * exactly what the decoder gave, for every instruction of every function of
 * libc and of this program, at the address it was decoded at and at another. */
#include <stdlib.h>
#include <reticle/binary.h>
#include "isa/x86_64/insn.h"
#include "isa/x86_64/relocate.h"
#include "check.h"

static bool same(const struct x86_insn *a, const struct x86_insn *b)
{
	return a->addr == b->addr && a->len == b->len && a->kind == b->kind && a->opcode == b->opcode &&
	       a->cc == b->cc && a->prefix_len == b->prefix_len && a->flags_read == b->flags_read &&
	       a->flags_written == b->flags_written && a->rip_rel == b->rip_rel &&
	       a->has_mem == b->has_mem && a->is_lea == b->is_lea && a->is_movsxd4 == b->is_movsxd4 &&
	       a->rep == b->rep && a->rep_plain == b->rep_plain && a->rep_cond == b->rep_cond &&
	       a->repne == b->repne && a->dst_reg == b->dst_reg && a->disp_off == b->disp_off &&
	       a->disp_size == b->disp_size && a->target == b->target && a->mem.base == b->mem.base &&
	       a->mem.index == b->mem.index && a->mem.scale == b->mem.scale &&
	       a->mem.disp == b->mem.disp && a->is_nop == b->is_nop;
}

static size_t round_trip(const char *path)
{
	rtl_binary *bin;
	size_t total = 0;
	CHECK_EQ(rtl_binary_open(path, &bin), 0);
	if (!bin)
		return 0;
	const uint64_t shift = 0x7f0000000000ull;   /* as if loaded there */
	for (size_t i = 0; i < rtl_binary_function_count(bin); i++) {
		const rtl_function *f = rtl_binary_function(bin, i);
		uint8_t *code = malloc(f->size ? f->size : 1);
		struct x86_insn *v = NULL, *w = NULL;
		size_t n = 0, m = 0;
		if (code && !rtl_binary_read(bin, f->addr, code, f->size)) {
			x86_decode_function(code, f->size, f->addr, &v, &n);
			x86_decode_function(code, f->size, f->addr + shift, &w, &m);
			CHECK_EQ(n, m);
			for (size_t k = 0; k < n && k < m; k++) {
				struct x86_packed p;
				struct x86_insn back;
				CHECK(x86_pack(&v[k], &p));
				x86_unpack(&p, v[k].addr, &back);
				if (!same(&back, &v[k])) {
					fprintf(stderr, "%s: %s+%#llx differs\n", path, f->name ? f->name : "?",
						(unsigned long long)(v[k].addr - f->addr));
					CHECK(0);
				}
				x86_unpack(&p, w[k].addr, &back);
				CHECK(same(&back, &w[k]));
			}
			total += n;
		}
		free(code);
		free(v);
		free(w);
	}
	rtl_binary_close(bin);
	return total;
}

int main(int argc, char **argv)
{
	(void)argc;
	size_t n = round_trip("/lib/x86_64-linux-gnu/libc.so.6") + round_trip(argv[0]) +
		   round_trip("/lib64/ld-linux-x86-64.so.2");
	CHECK(n > 100000);
	printf("%zu instructions packed and unpacked\n", n);
	return CHECK_DONE();
}
