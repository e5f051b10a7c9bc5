/* See array.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/array.h"

int rtl_grow_to(void *arrp, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : (256 + elem - 1) / elem;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (c > SIZE_MAX / elem)
		return -ENOMEM;
	/* the pointer goes through memcpy: *ARRP may be any object pointer
	 * type, which a void ** would not let us write without type punning */
	void *v;
	memcpy(&v, arrp, sizeof(v));
	v = realloc(v, c * elem);
	if (!v)
		return -ENOMEM;
	memcpy(arrp, &v, sizeof(v));
	*cap = c;
	return 0;
}
