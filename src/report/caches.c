/* The memtrace collector's cache results as a table: per configuration and
 * level, accesses, misses and the miss ratio of what was traced and, for a
 * sampled run, the estimate with its 95% interval (meta memtrace_cache_N_LEVEL
 * and memtrace_estimate_N_LEVEL, engine/memtrace.c). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "report/report_priv.h"

static const char *const level_key[] = { "l1i", "l1d", "l1", "l2", "l3" };
static const char *const level_name[] = { "L1I", "L1D", "L1", "L2", "L3" };
enum { MAX_CONFIGS = 4096 };

/* "NAME: loads A M stores A M": the name's length, accesses and misses. */
static bool parse_counts(const char *v, int *namelen, uint64_t *acc, uint64_t *miss)
{
	const char *colon = strstr(v, ": loads ");
	uint64_t la, lm, sa, sm;
	if (!colon || sscanf(colon, ": loads %" SCNu64 " %" SCNu64 " stores %" SCNu64 " %" SCNu64, &la, &lm, &sa,
			     &sm) != 4)
		return false;
	*namelen = (int)(colon - v);
	*acc = la + sa;
	*miss = lm + sm;
	return true;
}

int rpt_caches(rtl_profile *p, FILE *out)
{
	char key[64];
	bool any = false;
	int width = 13;
	for (int pass = 0; pass < 2; pass++)
		for (int c = 0; c < MAX_CONFIGS; c++) {
			bool found = false;
			for (size_t l = 0; l < sizeof(level_key) / sizeof(*level_key); l++) {
				snprintf(key, sizeof(key), "memtrace_cache_%d_%s", c, level_key[l]);
				const char *got = rtl_profile_get_meta(p, key);
				char v[512];   /* (the next lookup may reuse the profile's buffer) */
				int n;
				uint64_t acc, miss;
				if (!got || snprintf(v, sizeof(v), "%s", got) >= (int)sizeof(v) ||
				    !parse_counts(v, &n, &acc, &miss))
					continue;
				found = true;
				if (!pass) {
					width = n > width ? n : width;
					continue;
				}
				if (!any) {
					const char *sample = rtl_profile_get_meta(p, "memtrace_sample");
					if (sample)
						fprintf(out, "\ncaches (memtrace, sampled %s: counts of the traced "
							"windows; estimate of the whole run with its 95%% interval)\n", sample);
					else
						fprintf(out, "\ncaches (memtrace)\n");
					fprintf(out, "%4s  %-5s  %-*s  %14s  %12s  %8s%s\n", "cfg", "level", width,
						"configuration", "accesses", "misses", "miss %", sample ? "  estimate %" : "");
					any = true;
				}
				fprintf(out, "%4d  %-5s  %-*.*s  %14" PRIu64 "  %12" PRIu64 "  %8.4f", c, level_name[l],
					width, n, v, acc, miss, acc ? 100.0 * (double)miss / (double)acc : 0.0);
				snprintf(key, sizeof(key), "memtrace_estimate_%d_%s", c, level_key[l]);
				const char *e = rtl_profile_get_meta(p, key);
				double r, h;
				if (e && sscanf(e, "miss ratio %lf +- %lf", &r, &h) == 2)
					fprintf(out, "  %.4f +- %.4f", 100 * r, 100 * h);
				else if (e && sscanf(e, "miss ratio %lf", &r) == 1)
					fprintf(out, "  %.4f (no interval: a cluster of one point)", 100 * r);
				fputc('\n', out);
			}
			if (!found && c > 0)
				break;   /* configurations are numbered from 0 without a gap */
		}
	return 0;
}
