/* The program's own signals (signals.c). Internal to src/report/. */
#ifndef RETICLE_REPORT_SIGNALS_H
#define RETICLE_REPORT_SIGNALS_H

#include <stdint.h>
#include <stdio.h>
#include <reticle/profile.h>
#include <reticle/report.h>

struct rpt_signal {
	uint64_t value, runs;
	double seconds;
};

struct rpt_signals {
	struct rpt_signal *v;    /* by seconds held */
	size_t n, cap;
	double seconds;
};

/* The scope's signal runs summed by value (free s->v). */
int rpt_signals_load(rtl_profile *p, struct rpt_signals *s);
/* The text report's table, when P has signal runs. */
int rpt_signals(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* Chrome counter events ("ph":"C"), one track per thread ("signal TID"),
 * on the run's clock; FIRST: no comma before the first. */
int rpt_signal_counters(rtl_profile *p, FILE *out, int first);

#endif
