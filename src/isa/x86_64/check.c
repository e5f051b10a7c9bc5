#include <string.h>
#include "isa/x86_64/check.h"
#include "isa/x86_64/insn.h"
#include "isa/x86_64/relocate.h"

static int no_read(void *ctx, const uint64_t addr, void *buf, size_t len)
{
	return -1;
}

static uint64_t same(void *ctx, uint64_t addr)
{
	return addr;
}

int rtl_x86_check_function(const uint8_t *code, size_t len, uint64_t addr, const char **reason)
{
	struct x86_reloc_env env = { .addr = addr, .size = len, .code = code,
				     .read = no_read, .redirect = same };
	struct x86_reloc r;

	*reason = NULL;
	if (len < 5) {
		*reason = "shorter than a 5-byte jump";
		return 0;
	}
	return x86_relocate(&env, 0, &r, reason) == 0;
}

int x86_is_padding(const uint8_t *code, size_t len)
{
	size_t off = 0;
	while (off < len) {
		struct x86_insn in;
		if (code[off] == 0xcc) {
			off++;
			continue;
		}
		if (x86_decode(code + off, len - off, 0, &in) || !in.is_nop)
			return 0;
		off += in.len;
	}
	return 1;
}
