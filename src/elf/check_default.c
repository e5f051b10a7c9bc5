/* Weak stand-in for the relocator's check (src/isa/x86_64/ provides the
 * strong definition): accepts any function long enough for a 5-byte jmp.
 * Kept so that the binary analyzer links and works on its own. */
#include "isa/x86_64/check.h"

__attribute__((weak)) int rtl_x86_check_function(const uint8_t *code, size_t len,
						 uint64_t addr, const char **reason)
{
	(void)code;
	(void)addr;
	if (len >= 5)
		return 1;
	if (reason)
		*reason = "shorter than a 5-byte jump";
	return 0;
}
