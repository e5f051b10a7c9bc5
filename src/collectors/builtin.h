#ifndef RETICLE_COLLECTORS_BUILTIN_H
#define RETICLE_COLLECTORS_BUILTIN_H
#include <reticle/collector.h>
extern const struct rtl_collector collector_fcount;
extern const struct rtl_collector collector_bbcount;
extern const struct rtl_collector collector_edges;
#endif
