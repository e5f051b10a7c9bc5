/* Demangled names through libiberty, the demangler of binutils: the same
 * call and flags as c++filt's default (cplus_demangle with DMGL_PARAMS |
 * DMGL_ANSI | DMGL_VERBOSE, automatic style: C++, Rust, D...), so that a
 * name reads as c++filt, perf and valgrind print it. Rust names first, and
 * without DMGL_VERBOSE, as valgrind and perf print them: no hash after a
 * legacy name ('m::main', not 'm::main::h4009bc0cd8b193aa'), no crate
 * disambiguator in a v0 name ('alloc::fmt::format::format_inner', not
 * 'alloc[fdfd2bd8633a6659]::...'): callgrind's names for the same code. */
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
	if (!(plain = rust_demangle(base, DMGL_PARAMS | DMGL_ANSI)))
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
