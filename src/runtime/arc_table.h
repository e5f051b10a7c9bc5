/* The arc table: how often each indirect call site called each target.
 *
 * One open-addressed hash table per window, in its counter area, shared by
 * every indirect call site of the window's copies. A site owns two words
 * of its function's counters: the first holds the site's key prefix (its
 * number in the window, shifted above any user-space address), the second
 * the table's address. The inline snippet (isa/x86_64/arcs.c) hashes
 * (prefix | target), probes linearly, claims an empty slot with cmpxchg
 * and adds 1 to the slot's count: no call, no trap, whatever the number of
 * targets. The two header words before the table count the claimed slots
 * (claims stop at ARC_LIMIT, so a probe always meets an empty slot) and
 * the calls not counted once it is full. */
#ifndef RETICLE_RUNTIME_ARC_TABLE_H
#define RETICLE_RUNTIME_ARC_TABLE_H

#include <stddef.h>
#include <stdint.h>

enum {
	ARC_ENTRY_BITS = 16,
	ARC_ENTRIES = 1 << ARC_ENTRY_BITS,
	ARC_LIMIT = ARC_ENTRIES / 4 * 3,
	ARC_SITE_SHIFT = 47,                 /* user-space addresses are below 2^47 */
	ARC_MAX_SITES = (1 << (64 - ARC_SITE_SHIFT)) - 1,
	ARC_HEADER = 16,                     /* fill, lost */
};

#define ARC_TABLE_BYTES ((size_t)ARC_HEADER + (size_t)ARC_ENTRIES * 16)
/* the hash: (key * ARC_MULT) >> ARC_HASH_SHIFT, masked to an entry's offset */
#define ARC_MULT 0x9e3779b1u                 /* odd; sign-extended by imul imm32 */
#define ARC_HASH_SHIFT (64 - ARC_ENTRY_BITS - 4)
#define ARC_OFFSET_MASK (((uint32_t)ARC_ENTRIES - 1) << 4)

struct arc_entry {
	uint64_t key;                        /* prefix | target, 0 when free */
	uint64_t count;
};

/* The value a key holds below its site's prefix, sign-extended: what a
 * count by value (RTL_PRIM_COUNT_BY) kept of its 47 bits. */
static inline int64_t arc_key_value(uint64_t key)
{
	return (int64_t)(key << (64 - ARC_SITE_SHIFT)) >> (64 - ARC_SITE_SHIFT);
}

#endif
