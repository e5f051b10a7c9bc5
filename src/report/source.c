/* Source places for reports: each module's binary opened on first need,
 * without function discovery (rtl_binary_open_image), its DWARF read by the
 * binary analyzer on the first lookup. A module without DWARF costs one
 * open and a test per lookup. The binary is the one at the module's path
 * now: a profile does not record which build ran. */
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include "report/report_priv.h"
#include "util/array.h"

rtl_binary *rpt_sources_binary(struct rpt_sources *s, const char *module)
{
	struct rpt_source_module *m;

	if (!module)
		return NULL;
	if (s->last < s->n && !strcmp(s->mod[s->last].path, module))
		return s->mod[s->last].bin;
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->mod[i].path, module)) {
			s->last = i;
			return s->mod[i].bin;
		}
	if (rtl_grow(&s->mod, &s->cap, s->n + 1, sizeof(*s->mod)))
		return NULL;
	m = &s->mod[s->n];
	if (!(m->path = strdup(module)))
		return NULL;
	if (rtl_binary_open_image(module, &m->bin))
		m->bin = NULL;
	s->last = s->n++;
	return m->bin;
}

int rpt_source_line(struct rpt_sources *s, const char *module, uint64_t addr,
		    const char **file, int *line)
{
	rtl_binary *bin = rpt_sources_binary(s, module);

	return bin ? rtl_binary_source_line(bin, addr, file, line) : -1;
}

void rpt_sources_free(struct rpt_sources *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->mod[i].path);
		rtl_binary_close(s->mod[i].bin);
	}
	free(s->mod);
	memset(s, 0, sizeof(*s));
}
