/* reticle functions: lists what the binary analyzer found in a program. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "cli.h"
#include "util/json.h"

static const char usage_text[] =
	"usage: reticle functions [--format text|json] [--all] [--no-demangle]\n"
	"                         [--debug-dir DIR] PROGRAM\n"
	"\n"
	"Lists the functions the binary analyzer finds in PROGRAM (an x86-64 ELF\n"
	"executable or shared object), sorted by address: link-time address, size\n"
	"in bytes, where it was found, whether reticle can instrument it (and why\n"
	"not), and the name (sub_<hex> when no symbol names it, name@plt for PLT\n"
	"stubs), then \"at FILE:LINE\" where DWARF places its entry. Sources:\n"
	"symtab, dynsym, debugfile (the symtab of a separate debug file), plt,\n"
	"eh_frame (an FDE), entry (the ELF entry point, DT_INIT/DT_FINI, init/fini\n"
	"arrays), gap (code between known functions that nothing names; its bounds\n"
	"are guessed).\n"
	"\n"
	"  --format text|json  output format (default text)\n"
	"  --all               also list the loadable segments and the code\n"
	"                      pointers into function bodies (computed-goto and\n"
	"                      absolute switch tables)\n"
	"  --no-demangle       text: keep C++ and Rust names as the symbols spell\n"
	"                      them (by default shown as c++filt does; json gives\n"
	"                      both: name, and demangled when it differs)\n"
	"  --debug-dir DIR     look for PROGRAM's separate debug file in DIR first\n"
	"                      (DIR/.build-id/xx/yyyy.debug, or its .gnu_debuglink\n"
	"                      name), then in $RETICLE_DEBUG_DIR and /usr/lib/debug;\n"
	"                      with $DEBUGINFOD_URLS set, debuginfod servers last\n"
	"  -h, --help          show this help\n";

/* "symtab,plt" for text, "\"symtab\", \"plt\"" for JSON. */
static void sources_str(unsigned s, char *buf, size_t len, int json)
{
	const char *sep = json ? ", " : ",", *q = json ? "\"" : "";
	static const char *const names[] = { "symtab", "dynsym", "plt", "eh_frame", "entry", "gap",
					     "debugfile", "gopclntab" };
	buf[0] = 0;
	for (unsigned i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (s & (1u << i))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s%s%s",
				 buf[0] ? sep : "", q, names[i], q);
}

static const char *kind_str(const rtl_binary *bin)
{
	switch (rtl_binary_kind(bin)) {
	case RTL_BIN_EXEC: return "exec";
	case RTL_BIN_PIE: return "pie";
	default: return "shared";
	}
}

/* Prints F's name, demangled unless RAW. */
static void print_name(const rtl_function *f, int raw)
{
	char *d = raw ? NULL : rtl_demangle(f->name);

	fputs(d ? d : f->name, stdout);
	free(d);
}

static void print_text(rtl_binary *bin, int all, int raw)
{
	size_t n = rtl_binary_function_count(bin), ok = 0;
	char src[64];

	printf("%-16s %10s  %-24s %s  %s\n", "address", "size", "sources", "instrumentable", "name");
	for (size_t i = 0; i < n; i++) {
		const rtl_function *f = rtl_binary_function(bin, i);
		sources_str(f->sources, src, sizeof(src), 0);
		ok += f->instrumentable;
		printf("%016" PRIx64 " %10" PRIu64 "  %-24s %s%s%s  ", f->addr, f->size, src,
		       f->instrumentable ? "yes" : "no (", f->instrumentable ? "" : f->reason,
		       f->instrumentable ? "" : ")");
		print_name(f, raw);
		const char *file;
		int line;
		if (!rtl_binary_source_line(bin, f->addr, &file, &line))
			printf("  at %s:%d", file, line);
		putchar('\n');
	}
	printf("# %zu functions, %zu instrumentable, %zu FDEs; %s%s\n", n, ok,
	       rtl_binary_fde_count(bin), kind_str(bin), rtl_binary_is_static(bin) ? ", static" : "");
	if (!all)
		return;
	printf("# segments: vaddr memsz offset filesz flags\n");
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		printf("segment %016" PRIx64 " %" PRIu64 " %" PRIx64 " %" PRIu64 " %c%c%c\n", s->vaddr,
		       s->memsz, s->offset, s->filesz, s->flags & 4 ? 'r' : '-', s->flags & 2 ? 'w' : '-',
		       s->flags & 1 ? 'x' : '-');
	}
	printf("# code pointers: where target function\n");
	for (size_t i = 0; i < rtl_binary_code_pointer_count(bin); i++) {
		const rtl_code_pointer *c = rtl_binary_code_pointer(bin, i);
		const rtl_function *f = rtl_binary_find_function(bin, c->target);
		printf("codeptr %016" PRIx64 " %016" PRIx64 " %s\n", c->where, c->target, f ? f->name : "?");
	}
}

static void print_json(rtl_binary *bin, int all)
{
	size_t n = rtl_binary_function_count(bin);
	char src[96];

	printf("{\"path\": ");
	rtl_json_string(stdout, rtl_binary_path(bin));
	printf(", \"kind\": \"%s\", \"static\": %s, \"entry\": %" PRIu64 ", \"fde_count\": %zu,\n \"functions\": [",
	       kind_str(bin), rtl_binary_is_static(bin) ? "true" : "false", rtl_binary_entry(bin),
	       rtl_binary_fde_count(bin));
	for (size_t i = 0; i < n; i++) {
		const rtl_function *f = rtl_binary_function(bin, i);
		sources_str(f->sources, src, sizeof(src), 1);
		printf("%s\n  {\"addr\": %" PRIu64 ", \"size\": %" PRIu64 ", \"sources\": [%s], \"instrumentable\": %s, \"reason\": ",
		       i ? "," : "", f->addr, f->size, src, f->instrumentable ? "true" : "false");
		if (f->instrumentable)
			fputs("null", stdout);
		else
			rtl_json_string(stdout, f->reason);
		fputs(", \"name\": ", stdout);
		rtl_json_string(stdout, f->name);
		char *d = rtl_demangle(f->name);
		if (d) {
			fputs(", \"demangled\": ", stdout);
			rtl_json_string(stdout, d);
			free(d);
		}
		const char *file;
		int line;
		if (!rtl_binary_source_line(bin, f->addr, &file, &line)) {
			fputs(", \"file\": ", stdout);
			rtl_json_string(stdout, file);
			printf(", \"line\": %d", line);
		}
		fputc('}', stdout);
	}
	printf("]");
	if (all) {
		printf(",\n \"segments\": [");
		for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
			const rtl_segment *s = rtl_binary_segment(bin, i);
			printf("%s{\"vaddr\": %" PRIu64 ", \"memsz\": %" PRIu64 ", \"offset\": %" PRIu64
			       ", \"filesz\": %" PRIu64 ", \"flags\": %u}", i ? ", " : "", s->vaddr, s->memsz,
			       s->offset, s->filesz, s->flags);
		}
		printf("],\n \"code_pointers\": [");
		for (size_t i = 0; i < rtl_binary_code_pointer_count(bin); i++) {
			const rtl_code_pointer *c = rtl_binary_code_pointer(bin, i);
			printf("%s{\"where\": %" PRIu64 ", \"target\": %" PRIu64 "}", i ? ",\n  " : "\n  ",
			       c->where, c->target);
		}
		printf("]");
	}
	printf("}\n");
}

int cmd_functions(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "all", no_argument, NULL, 'a' },
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "debug-dir", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int json = 0, all = 0, raw = 0, c;
	rtl_binary *bin;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			return 0;
		} else if (c == 'a') {
			all = 1;
		} else if (c == 'D') {
			raw = 1;
		} else if (c == 'g') {
			if (cli_add_debug_dir(optarg))
				return CLI_EXIT_USAGE;
		} else if (c == 'f' && (!strcmp(optarg, "json") || !strcmp(optarg, "text"))) {
			json = !strcmp(optarg, "json");
		} else if (c == 'f') {
			cli_error("functions: unknown format '%s' (text or json)", optarg);
			return CLI_EXIT_USAGE;
		} else {
			cli_error("functions: bad option '%s' (try 'reticle functions --help')", argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_error("functions: expected one PROGRAM (try 'reticle functions --help')");
		return CLI_EXIT_USAGE;
	}
	int err = rtl_binary_open(argv[optind], &bin);
	if (err) {
		cli_error("%s: %s", argv[optind], rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	rtl_binary_check_functions(bin);
	if (json)
		print_json(bin, all);
	else
		print_text(bin, all, raw);
	rtl_binary_close(bin);
	return fflush(stdout) ? CLI_EXIT_FAIL : 0;
}
