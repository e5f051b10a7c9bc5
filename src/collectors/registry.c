/* The collectors built into libreticle. */
#include <string.h>
#include <reticle/collector.h>
#include "collectors/builtin.h"

static const struct rtl_collector *const builtin[] = {
	&collector_fcount,
	&collector_bbcount,
	&collector_edges,
};

size_t rtl_collector_count(void)
{
	return sizeof(builtin) / sizeof(builtin[0]);
}

const struct rtl_collector *rtl_collector_at(size_t i)
{
	return i < rtl_collector_count() ? builtin[i] : NULL;
}

const struct rtl_collector *rtl_collector_find(const char *name)
{
	for (size_t i = 0; i < rtl_collector_count(); i++)
		if (!strcmp(builtin[i]->name, name))
			return builtin[i];
	return NULL;
}
