/* Parses and checks cache-hierarchy specifications (grammar in
 * docs/cachesim.md). Errors name the parameter and never print. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>

static const char *const level_names[RTL_LEVELS] = { "l1i", "l1d", "l1", "l2", "l3" };

static int fail(char *err, size_t len, const char *fmt, const char *a, const char *b)
{
	if (err && len)
		snprintf(err, len, fmt, a, b);
	return -RTL_ERR_BAD_OPTION;
}

/* "32k", "1M", "0x8000", "4096" -> bytes; 0 on error. */
static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v;

	if (!isdigit((unsigned char)*s))
		return 0;
	v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	return *end ? 0 : v;
}

static int parse_option(rtl_cache_level *l, const char *o, int *write_set)
{
	static const char *const repl[] = { "lru", "fifo", "random", "plru" };

	for (int i = 0; i < 4; i++)
		if (!strcasecmp(o, repl[i]))
			return l->repl = i, 0;
	if (!strcasecmp(o, "wb"))
		return l->write = RTL_WRITE_BACK, *write_set = 1, 0;
	if (!strcasecmp(o, "wt"))
		return l->write = RTL_WRITE_THROUGH, *write_set = 1, 0;
	if (!strcasecmp(o, "wnone"))
		return l->write = RTL_WRITE_NONE, *write_set = 1, 0;
	if (!strcasecmp(o, "wa"))
		return l->no_write_allocate = 0, 0;
	if (!strcasecmp(o, "nwa"))
		return l->no_write_allocate = 1, 0;
	return -1;
}

/* SIZE:WAYS:LINE[:OPTION...]; WAYS may be "full". */
static int parse_level(const char *key, char *val, rtl_cache_level *l, int *write_set,
		       char *err, size_t len)
{
	char *save = NULL, *f[3];
	char *tok = strtok_r(val, ":", &save);
	int full = 0;

	for (int i = 0; i < 3; i++, tok = strtok_r(NULL, ":", &save)) {
		if (!tok)
			return fail(err, len, "%s: expected SIZE:WAYS:LINE, got fewer fields%s", key, "");
		f[i] = tok;
	}
	*l = (rtl_cache_level){ .present = 1, .repl = RTL_REPL_LRU, .write = RTL_WRITE_BACK };
	l->size = parse_size(f[0]);
	if (!l->size)
		return fail(err, len, "%s: bad size '%s'", key, f[0]);
	if (!strcasecmp(f[1], "full"))
		full = 1;
	else if (!(l->assoc = (uint32_t)parse_size(f[1])))
		return fail(err, len, "%s: bad number of ways '%s'", key, f[1]);
	if (!(l->line = (uint32_t)parse_size(f[2])))
		return fail(err, len, "%s: bad line size '%s'", key, f[2]);
	if (full)
		l->assoc = (uint32_t)(l->size / l->line);
	for (; tok; tok = strtok_r(NULL, ":", &save))
		if (parse_option(l, tok, write_set) < 0)
			return fail(err, len, "%s: unknown option '%s' (lru fifo random plru wb wt wnone wa nwa)", key, tok);
	return 0;
}

static int parse_item(rtl_cache_config *c, char *item, rtl_cache_level *ll, int write_set[],
		      int *dflt_write, char *err, size_t len)
{
	char *eq = strchr(item, '=');
	char *val;

	if (!eq) {
		if (!strcasecmp(item, "cachegrind")) {
			c->cross = RTL_CROSS_ONCE;
			c->modify_as_load = 1;
			c->max_data_size = UINT32_MAX;   /* resolved to the smallest line */
			*dflt_write = RTL_WRITE_NONE;
			return 0;
		}
		return fail(err, len, "unknown preset or item '%s'%s", item, "");
	}
	*eq = 0;
	val = eq + 1;
	for (int i = 0; i < RTL_LEVELS; i++)
		if (!strcasecmp(item, level_names[i]))
			return parse_level(item, val, &c->level[i], &write_set[i], err, len);
	if (!strcasecmp(item, "ll"))
		return parse_level(item, val, ll, &write_set[RTL_LEVELS], err, len);
	if (!strcasecmp(item, "name"))
		return snprintf(c->name, sizeof(c->name), "%s", val), 0;
	if (!strcasecmp(item, "cross")) {
		if (strcasecmp(val, "split") && strcasecmp(val, "once"))
			return fail(err, len, "cross: expected split or once, got '%s'%s", val, "");
		c->cross = !strcasecmp(val, "once") ? RTL_CROSS_ONCE : RTL_CROSS_SPLIT;
		return 0;
	}
	if (!strcasecmp(item, "modify")) {
		if (strcasecmp(val, "rw") && strcasecmp(val, "load"))
			return fail(err, len, "modify: expected rw or load, got '%s'%s", val, "");
		c->modify_as_load = !strcasecmp(val, "load");
		return 0;
	}
	if (!strcasecmp(item, "inclusive")) {
		c->inclusive = !strcasecmp(val, "yes") || !strcmp(val, "1");
		return 0;
	}
	if (!strcasecmp(item, "maxsize")) {
		c->max_data_size = (uint32_t)strtoul(val, NULL, 0);
		return 0;
	}
	if (!strcasecmp(item, "seed")) {
		c->seed = strtoull(val, NULL, 0);
		return 0;
	}
	return fail(err, len, "unknown parameter '%s'%s", item, "");
}

int rtl_cache_config_parse(const char *spec, rtl_cache_config *out, char *err, size_t len)
{
	char *copy = strdup(spec), *save = NULL;
	rtl_cache_level ll = { 0 };
	int write_set[RTL_LEVELS + 1] = { 0 }, dflt_write = -1, rc = 0;

	if (!copy)
		return -RTL_ERR_BAD_OPTION;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", spec);
	for (char *it = strtok_r(copy, ",", &save); it && !rc; it = strtok_r(NULL, ",", &save))
		rc = parse_item(out, it, &ll, write_set, &dflt_write, err, len);
	free(copy);
	if (rc)
		return rc;
	if (ll.present) {
		int at = out->level[RTL_L2].present ? RTL_L3 : RTL_L2;
		if (out->level[at].present)
			return fail(err, len, "ll: %s is given as well%s", level_names[at], "");
		out->level[at] = ll;
		write_set[at] = write_set[RTL_LEVELS];
	}
	for (int i = 0; i < RTL_LEVELS && dflt_write >= 0; i++)
		if (out->level[i].present && !write_set[i])
			out->level[i].write = dflt_write;
	/* cachegrind cuts data accesses larger than its smallest line size
	 * (only valgrind's dirty helpers, e.g. FXSAVE, make such accesses) */
	if (out->max_data_size == UINT32_MAX) {
		for (int i = 0; i < RTL_LEVELS; i++)
			if (out->level[i].present && out->level[i].line < out->max_data_size)
				out->max_data_size = out->level[i].line;
	}
	return rtl_cache_config_check(out, err, len);
}

static int check_level(const char *key, const rtl_cache_level *l, char *err, size_t len)
{
	char a[64], b[96];

	snprintf(a, sizeof(a), "%u", l->line);
	/* a config made by hand (the API, Lua) reaches here unparsed */
	if (!l->line || !l->size)
		return fail(err, len, "%s: size and line size must be at least 1%s", key, "");
	if (l->repl < RTL_REPL_LRU || l->repl > RTL_REPL_PLRU || l->write < RTL_WRITE_BACK || l->write > RTL_WRITE_NONE)
		return fail(err, len, "%s: unknown replacement or write policy%s", key, "");
	if (l->line & (l->line - 1))
		return fail(err, len, "%s: line size %s is not a power of two", key, a);
	if (!l->assoc)
		return fail(err, len, "%s: number of ways must be at least 1%s", key, "");
	if (l->size % ((uint64_t)l->line * l->assoc)) {
		snprintf(b, sizeof(b), "%llu is not a multiple of line size x ways (%u x %u)",
			 (unsigned long long)l->size, l->line, l->assoc);
		return fail(err, len, "%s: size %s", key, b);
	}
	if (l->size / l->line > (1u << 26))
		return fail(err, len, "%s: more than 67108864 lines (the simulator keeps a tag per line)%s", key, "");
	if (l->repl == RTL_REPL_PLRU && ((l->assoc & (l->assoc - 1)) || l->assoc > 64))
		return fail(err, len, "%s: plru needs a power-of-two number of ways up to 64%s", key, "");
	if (l->assoc > 65536)
		return fail(err, len, "%s: more than 65536 ways%s", key, "");
	return 0;
}

int rtl_cache_config_check(const rtl_cache_config *c, char *err, size_t len)
{
	const rtl_cache_level *L = c->level;
	int rc;

	for (int i = 0; i < RTL_LEVELS; i++)
		if (L[i].present && (rc = check_level(level_names[i], &L[i], err, len)))
			return rc;
	if (L[RTL_L1].present && (L[RTL_L1I].present || L[RTL_L1D].present))
		return fail(err, len, "l1: give either l1 (unified) or l1i/l1d (split)%s%s", "", "");
	if (!L[RTL_L1].present && !L[RTL_L1I].present && !L[RTL_L1D].present)
		return fail(err, len, "no first level: give l1, l1i or l1d%s%s", "", "");
	if (L[RTL_L3].present && !L[RTL_L2].present)
		return fail(err, len, "l3: given without l2%s%s", "", "");
	if (c->cross != RTL_CROSS_SPLIT && c->cross != RTL_CROSS_ONCE)
		return fail(err, len, "cross: unknown mode%s%s", "", "");
	return 0;
}
