/* Demangled names through libiberty, the demangler of binutils: the same
 * call and flags as c++filt's default (cplus_demangle with DMGL_PARAMS |
 * DMGL_ANSI | DMGL_VERBOSE, automatic style: C++, Rust, D...), so that a
 * name reads as c++filt, perf and valgrind print it. */
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>
#include <reticle/binary.h>

char *rtl_demangle(const char *name)
{
	const char *at;
	char *base, *plain, *out;
	size_t n;

	/* Every mangling scheme starts with '_'; sub_<hex> never demangles. */
	if (!name || name[0] != '_' || !strncmp(name, "sub_", 4))
		return NULL;
	/* "name@plt", "name@@VERSION": the suffix is not part of the mangled
	 * name (c++filt splits words at '@' too). */
	at = strchr(name, '@');
	n = at ? (size_t)(at - name) : strlen(name);
	if (!(base = strndup(name, n)))
		return NULL;
	plain = cplus_demangle(base, DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE);
	free(base);
	if (!plain || !at)
		return plain;
	n = strlen(plain);
	if ((out = realloc(plain, n + strlen(at) + 1)))
		strcpy(out + n, at);
	else
		free(plain);
	return out;
}
