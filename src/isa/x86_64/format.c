/* x86-64 instructions as text (Intel syntax, Zydis's formatter), for
 * listings such as `reticle annotate`. */
#include <stdio.h>
#include <Zydis/Zydis.h>
#include "isa/x86_64/insn.h"

int x86_format(const uint8_t *code, size_t len, uint64_t addr, char *buf, size_t size)
{
	ZydisDisassembledInstruction in;

	if (!ZYAN_SUCCESS(ZydisDisassembleIntel(ZYDIS_MACHINE_MODE_LONG_64, addr, code, len, &in))) {
		snprintf(buf, size, "(bad)");
		return 0;
	}
	snprintf(buf, size, "%s", in.text);
	return in.info.length;
}
