#ifndef RETICLE_COLLECTORS_BUILTIN_H
#define RETICLE_COLLECTORS_BUILTIN_H
#include <reticle/collector.h>
extern const struct rtl_collector collector_fcount;
extern const struct rtl_collector collector_bbcount;
extern const struct rtl_collector collector_edges;
extern const struct rtl_collector collector_callgraph;
extern const struct rtl_collector collector_calltime;
extern const struct rtl_collector collector_cover;
extern const struct rtl_collector collector_loops;
extern const struct rtl_collector collector_sample;
extern const struct rtl_collector collector_shim;
extern const struct rtl_collector collector_memtrace;
extern const struct rtl_collector collector_bbv;
/* Sorts counter views as rtl_function_view's counters are (the engine's). */
void rtl_counters_sort(struct rtl_counter_view *v, size_t n);
#endif
