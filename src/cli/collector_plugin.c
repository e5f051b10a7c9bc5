/* reticle run --collector ./x.so[:ARGS]: a collector built outside the tree
 * (reticle/collector.h says what the shared object defines). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include "cli.h"

int cli_load_collector(const char *spec, const struct rtl_collector *const *taken, size_t ntaken,
		       const struct rtl_collector **out)
{
	char *path = strdup(spec), *args = path ? strchr(path, ':') : NULL;
	int rc = CLI_EXIT_USAGE;
	if (!path)
		return CLI_EXIT_FAIL;
	if (args)
		*args++ = 0;
	/* RTLD_NOW: a missing symbol is found here, not in the middle of the
	 * run; the handle stays open for the process's life */
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	rtl_collector_entry_fn entry = h ? (rtl_collector_entry_fn)dlsym(h, RTL_COLLECTOR_ENTRY) : NULL;
	const struct rtl_collector *c = entry ? entry(RTL_COLLECTOR_API, args ? args : "") : NULL;
	const char *why;
	if (!h)
		cli_error("run: cannot load collector %s: %s", path, dlerror());
	else if (!entry)
		cli_error("run: %s is no reticle collector: it defines no %s() (see reticle/collector.h)",
			  path, RTL_COLLECTOR_ENTRY);
	else if (!c)
		cli_error("run: collector %s refused %s%s%s", path, args ? "its arguments '" : "to start",
			  args ? args : "", args ? "'" : "");
	else if (!c->name || !*c->name || strpbrk(c->name, ",: \t\n"))
		cli_error("run: collector %s has no usable name (one word, no ',' or ':')", path);
	else if (rtl_collector_find(c->name))
		cli_error("run: collector %s is named '%s', as a built-in collector is", path, c->name);
	else if (rtl_collector_check(c, &why))
		cli_error("run: collector '%s' (%s): %s", c->name, path, why);
	else {
		rc = 0;
		for (size_t i = 0; i < ntaken; i++)
			if (!strcmp(taken[i]->name, c->name)) {
				cli_error("run: two collectors are named '%s' (%s is the second)", c->name, path);
				rc = CLI_EXIT_USAGE;
			}
	}
	if (!rc)
		*out = c;
	free(path);
	return rc;
}
