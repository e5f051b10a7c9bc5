/* The sample collector's results by function (samples.c). Internal to
 * src/report/. */
#ifndef RETICLE_REPORT_SAMPLES_H
#define RETICLE_REPORT_SAMPLES_H

#include <stddef.h>
#include <stdint.h>
#include "report/cct.h"

struct rpt_sampled_fn {
	int64_t function;
	uint64_t self, total;            /* samples */
	double self_seconds, total_seconds;   /* their periods (clock events) */
};

struct rpt_sampled {
	struct cct tree;                 /* the sampled stacks, threads merged */
	struct rpt_sampled_fn *fn;       /* by self, then total */
	size_t n;
	uint64_t samples;
	double seconds;
};

/* P's sampled stacks by function; -ENODATA when it has none. Free with
 * rpt_sampled_free. */
int rpt_sampled_load(rtl_profile *p, const rtl_report_options *o, struct rpt_sampled *s);
void rpt_sampled_free(struct rpt_sampled *s);
/* The text report's table of them, when P has samples. */
int rpt_samples(rtl_profile *p, const rtl_report_options *o, FILE *out);

#endif
