/* The identity the signal slot holds (RTL_PRIM_SLOT_SET): a 32-bit
 * immediate, so that setting it is one instruction (mov qword gs:[SIGNAL],
 * imm32) with no register, no flag and no stack: bit 31 set, an 11-bit tag
 * of the binary (a hash of its build-id, or of its file's identity), and
 * the function's index among the binary's (below 2^20). Stable for a
 * binary across runs, as saved copies need; two binaries of a process
 * with the same tag are told apart by nothing (1 chance in 2,048 a pair):
 * their functions' samples then go to the first one's. */
#include <pthread.h>
#include <string.h>
#include "probe/plan.h"
#include "util/hash.h"

static uint32_t tag_of(const rtl_binary *bin)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct { const rtl_binary *bin; uint32_t tag; } memo[16];
	static unsigned next;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < 16; i++)
		if (memo[i].bin == bin) {
			uint32_t t = memo[i].tag;
			pthread_mutex_unlock(&lock);
			return t;
		}
	char id[128] = "";
	rtl_binary_identity(bin, id, sizeof(id));
	uint64_t h = fnv1a(FNV1A_INIT, id, strlen(id));
	uint32_t tag = (uint32_t)(h ^ (h >> 32)) & 0x7ff;
	memo[next % 16].bin = bin;
	memo[next % 16].tag = tag;
	next++;
	pthread_mutex_unlock(&lock);
	return tag;
}

uint32_t probe_signal_id(const rtl_binary *bin, size_t k)
{
	return k < (1u << 20) ? 0x80000000u | tag_of(bin) << 20 | (uint32_t)k : 0;
}

bool probe_signal_of(const rtl_binary *bin, uint64_t value, size_t *k)
{
	if (value >> 31 != 0x1ffffffffull || ((value >> 20) & 0x7ff) != tag_of(bin))
		return false;
	*k = (size_t)(value & 0xfffff);
	return *k < rtl_binary_function_count(bin);
}
