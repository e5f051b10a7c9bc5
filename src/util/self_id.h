/* Which build of reticle this is: what a file reticle writes for itself
 * to read in a later run (warm start's saved copies) is only trusted by the
 * build that wrote it, so that a new reticle never places a copy its
 * predecessor made. */
#ifndef RETICLE_UTIL_SELF_ID_H
#define RETICLE_UTIL_SELF_ID_H

#include <stdint.h>

/* A hash of the running executable's GNU build-id, or, without one, of its
 * file's identity (device, inode, size, modification time). Never 0. */
uint64_t rtl_self_id(void);

#endif
