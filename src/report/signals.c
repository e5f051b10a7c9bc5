/* The program's own signals (reticle/signal.h, the shim collector): the
 * time each value held, over the threads and images of the scope, for the
 * text and JSON reports; and its runs as counter tracks for chrome. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include "report/report_priv.h"
#include "report/signals.h"
#include "util/array.h"

static int add_run(const rtl_profile_signal_run *r, void *user)
{
	struct rpt_signals *s = user;
	size_t i = 0;
	while (i < s->n && s->v[i].value != r->value)
		i++;
	if (i == s->n) {
		if (rtl_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
			return -ENOMEM;
		s->v[s->n++] = (struct rpt_signal){ .value = r->value };
	}
	double sec = (double)(r->end_ns - r->start_ns) / 1e9;
	s->v[i].seconds += sec;
	s->v[i].runs++;
	s->seconds += sec;
	return 0;
}

static int by_seconds(const void *a, const void *b)
{
	const struct rpt_signal *x = a, *y = b;
	return (x->seconds < y->seconds) - (x->seconds > y->seconds);
}

int rpt_signals_load(rtl_profile *p, struct rpt_signals *s)
{
	*s = (struct rpt_signals){ 0 };
	int err = rtl_profile_foreach_signal_run(p, add_run, s);
	if (err) {
		free(s->v);
		return err;
	}
	qsort(s->v, s->n, sizeof(*s->v), by_seconds);
	return 0;
}

int rpt_signals(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct rpt_signals s;
	int err = rpt_signals_load(p, &s);
	if (err || !s.n)
		return err;
	fprintf(out, "\nsignals (shim: the program's own, reticle/signal.h; seconds each value held, all threads)\n");
	fprintf(out, "%20s  %10s  %7s  %8s\n", "value", "seconds", "share", "runs");
	size_t limit = o->top && o->top < s.n ? o->top : s.n;
	for (size_t i = 0; i < limit; i++)
		fprintf(out, "%20" PRIu64 "  %10.6f  %6.2f%%  %8" PRIu64 "\n", s.v[i].value, s.v[i].seconds,
			s.seconds > 0 ? 100.0 * s.v[i].seconds / s.seconds : 0.0, s.v[i].runs);
	if (limit < s.n)
		fprintf(out, "(%zu more values: --top N or --top 0 for more)\n", s.n - limit);
	free(s.v);
	return 0;
}

struct counters {
	FILE *out;
	int64_t process;
	int pid;
	rtl_profile *p;
	int first;
};

static int pid_of_image(const rtl_profile_process *proc, void *user)
{
	struct counters *c = user;
	if (proc->id == c->process)
		c->pid = proc->pid;
	return 0;
}

static int counter_event(const rtl_profile_signal_run *r, void *user)
{
	struct counters *c = user;
	if (r->process != c->process) {
		c->process = r->process;
		c->pid = 0;
		int err = rtl_profile_foreach_process(c->p, pid_of_image, c);
		if (err)
			return err;
	}
	/* the value from its start, 0 from its end (the next run, if any,
	 * starts there and overwrites it) */
	fprintf(c->out, "%s\n{\"name\":\"signal %d\",\"ph\":\"C\",\"ts\":%" PRIu64 ".%03u,\"pid\":%d,"
		"\"args\":{\"value\":%" PRIu64 "}},\n{\"name\":\"signal %d\",\"ph\":\"C\",\"ts\":%" PRIu64
		".%03u,\"pid\":%d,\"args\":{\"value\":0}}", c->first ? "" : ",", r->tid, r->start_ns / 1000,
		(unsigned)(r->start_ns % 1000), c->pid, r->value, r->tid, r->end_ns / 1000, (unsigned)(r->end_ns % 1000),
		c->pid);
	c->first = 0;
	return 0;
}

int rpt_signal_counters(rtl_profile *p, FILE *out, int first)
{
	struct counters c = { out, -1, 0, p, first };
	return rtl_profile_foreach_signal_run(p, counter_event, &c);
}
