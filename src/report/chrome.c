/* Chrome's trace event format (Perfetto's UI, chrome://tracing) from the
 * calling-context tree: per process and thread, each call path is one
 * complete event ("ph": "X") as long as its inclusive time, under its
 * caller's, its callees side by side in the order of their first call.
 * The picture is the tree's, not a recording of when each call ran: a path
 * called a thousand times is one event with the thousand calls' time (in
 * "args", with its exclusive time and its calls). Each thread starts at 0. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "report/cct.h"
#include "report/signals.h"
#include "util/array.h"

struct chrome {
	FILE *out;
	int first;
	int64_t *ts, *dur, *next;  /* per node (ns): start, length, where its next callee starts */
	struct thread_cursor { int pid, tid; int64_t next; } *threads;
	size_t nthreads, capthreads;
};

static void event_head(struct chrome *c)
{
	fputs(c->first ? "\n" : ",\n", c->out);
	c->first = 0;
}

static int process_name(const rtl_profile_process *proc, void *user)
{
	struct chrome *c = user;
	event_head(c);
	fprintf(c->out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
		proc->pid, proc->pid);
	rtl_json_string(c->out, proc->command ? proc->command : "?");
	fputs("}}", c->out);
	return 0;
}

/* The cursor of the roots of thread (PID, TID), named on first sight. */
static int64_t *thread_next(struct chrome *c, int pid, int tid)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].pid == pid && c->threads[i].tid == tid)
			return &c->threads[i].next;
	if (rtl_grow(&c->threads, &c->capthreads, c->nthreads + 1, sizeof(*c->threads)))
		return NULL;
	c->threads[c->nthreads] = (struct thread_cursor){ pid, tid, 0 };
	event_head(c);
	fprintf(c->out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"name\":\"thread %d\"}}", pid, tid, tid);
	return &c->threads[c->nthreads++].next;
}

int rtl_report_chrome(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct cct t;
	int err = cct_load(p, 1, o, &t);
	if (err)
		return err;
	struct chrome c = { out, 1, malloc(t.count * sizeof(int64_t)), malloc(t.count * sizeof(int64_t)),
			    malloc(t.count * sizeof(int64_t)), NULL, 0, 0 };
	if (!c.ts || !c.dur || !c.next)
		err = -ENOMEM;
	if (!err) {
		fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"reticle calltime: the "
		      "calling-context tree, one event per call path, not a timeline\"},\"traceEvents\":[", out);
		err = rtl_profile_foreach_process(p, process_name, &c);
	}
	/* nodes come callers first: a callee starts where its caller's
	 * previous callee ended, clamped into its caller (rounding, or a
	 * clock that went back, must not break the nesting) */
	for (size_t i = 0; i < t.count && !err; i++) {
		const struct cct_node *n = &t.n[i];
		/* whole nanoseconds: printed exactly, callees end within callers */
		int64_t dur = n->inclusive > 0 ? llround(n->inclusive * 1e9) : 0, ts;
		int64_t *next = n->parent == CCT_NONE ? thread_next(&c, n->pid, n->tid) : &c.next[n->parent];
		if (!next) {
			err = -ENOMEM;
			break;
		}
		ts = *next;
		if (n->parent != CCT_NONE) {
			int64_t end = c.ts[n->parent] + c.dur[n->parent];
			if (ts > end)
				ts = end;
			if (ts + dur > end)
				dur = end - ts;
		}
		*next = ts + dur;
		c.ts[i] = c.next[i] = ts;
		c.dur[i] = dur;
		char buf[32];
		event_head(&c);
		fputs("{\"name\":", out);
		rtl_json_string(out, cct_name(&t, i, buf));
		fputs(",\"cat\":", out);
		rtl_json_string(out, cct_module(&t, i));
		fprintf(out, ",\"ph\":\"X\",\"ts\":%lld.%03d,\"dur\":%lld.%03d,\"pid\":%d,\"tid\":%d,"
			"\"args\":{\"calls\":%llu,\"inclusive_s\":%.9f,\"exclusive_s\":%.9f}}",
			(long long)(ts / 1000), (int)(ts % 1000), (long long)(dur / 1000), (int)(dur % 1000), n->pid, n->tid, (unsigned long long)n->calls, n->inclusive, n->exclusive);
	}
	/* the program's own signals (shim), as counters on the run's clock */
	if (!err && c.ts && c.dur && c.next)
		err = rpt_signal_counters(p, out, c.first);
	if (c.ts && c.dur && c.next)
		fputs("\n]}\n", out);
	free(c.ts);
	free(c.dur);
	free(c.next);
	free(c.threads);
	cct_free(&t);
	return err ? err : rpt_out_status(out);
}
