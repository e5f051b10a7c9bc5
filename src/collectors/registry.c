/* The collectors built into libreticle. */
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include "collectors/builtin.h"

static const struct rtl_collector *const builtin[] = {
	&collector_fcount,
	&collector_bbcount,
	&collector_edges,
	&collector_callgraph,
	&collector_calltime,
	&collector_cover,
	&collector_loops,
	&collector_sample,
	&collector_shim,
	&collector_memtrace,
	&collector_bbv,
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

static int cmp_counter(const void *a, const void *b)
{
	const struct rtl_counter_view *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

const struct rtl_counter_view *rtl_counter_find(const struct rtl_counter_view *v, size_t n,
						enum rtl_point_kind kind, uint64_t addr)
{
	struct rtl_counter_view key = { (uint8_t)kind, 0, addr, 0, 0 };   /* the shared one */
	return n ? bsearch(&key, v, n, sizeof(key), cmp_counter) : NULL;
}

void rtl_counters_sort(struct rtl_counter_view *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_counter);
}
