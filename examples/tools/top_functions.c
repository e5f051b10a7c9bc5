/* A tool built against an installed reticle (pkg-config reticle): prints
 * the N functions of a profile that executed most instructions (or, in a
 * profile without instruction counts, were called most), with their share.
 *
 *   cc top_functions.c $(pkg-config --cflags --libs reticle) -o top_functions
 *   ./top_functions prof.db 10 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <reticle/error.h>
#include <reticle/profile.h>

struct top {
	long left;
	uint64_t total;
	int by_instrs;
};

static int row(const rtl_profile_function *f, void *user)
{
	struct top *t = user;
	uint64_t v = t->by_instrs ? f->instrs : f->calls;
	printf("%14" PRIu64 "  %6.2f%%  %s\n", v, t->total ? 100.0 * (double)v / (double)t->total : 0.0,
	       f->name ? f->name : "?");
	return --t->left > 0 ? 0 : 1;   /* non-zero: stop */
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PROFILE [N]\n", argv[0]);
		return 2;
	}
	rtl_profile *p;
	int err = rtl_profile_open(argv[1], &p);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[1], rtl_strerror(err));
		return 1;
	}
	rtl_profile_totals t;
	struct top top = { argc > 2 ? atol(argv[2]) : 10, 0, 0 };
	if (!(err = rtl_profile_get_totals(p, &t))) {
		top.by_instrs = (t.have & RTL_HAVE_INSTRS) != 0;
		top.total = top.by_instrs ? t.instrs : t.calls;
		printf("%14s  %7s  function\n", top.by_instrs ? "Ir" : "calls", "share");
		if (top.left > 0)
			err = rtl_profile_foreach_function(p, 0, row, &top);
	}
	rtl_profile_close(p);
	if (err < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], rtl_strerror(err));
		return 1;
	}
	return 0;
}
