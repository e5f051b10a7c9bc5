/* Folded stacks (flame graphs: flamegraph.pl, inferno, speedscope, and
 * reticle report --format svg) from the calling-context tree:
 *
 *   _start;__libc_start_main;main;parse 1234567
 *
 * one line per call path with its exclusive time in nanoseconds (sampled
 * stacks: the samples taken there), threads
 * and images merged; frames are function names (';' in a name becomes
 * ':'). A path that took no time of its own has no line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report/cct.h"
#include "util/array.h"

static int fold_line(const struct cct *t, size_t node, const char *path, void *user)
{
	/* sampled stacks: their samples, as perf's stackcollapse writes */
	long long ns = t->sampled ? (long long)t->n[node].calls : llround(t->n[node].exclusive * 1e9);
	if (ns > 0)
		fprintf(user, "%s %lld\n", path, ns);
	return 0;
}

int rtl_report_folded(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct cct t;
	int err = cct_load(p, 0, o, &t);
	if (err)
		return err;
	err = cct_walk_paths(&t, fold_line, out);
	cct_free(&t);
	return err ? err : rpt_out_status(out);
}
