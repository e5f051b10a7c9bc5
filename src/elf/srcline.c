/* Source lines from DWARF (.debug_line) through libdw, opened on first use
 * over the same libelf handle, or over the separate debug file's (Debian's
 * -dbg/-dbgsym packages) when the binary has no DWARF of its own. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "binary_internal.h"

int rtl_binary_has_source_lines(rtl_binary *bin)
{
	if (!bin->dwarf_tried) {
		bin->dwarf_tried = 1;
		bin->dwarf = dwarf_begin_elf(bin->elf, DWARF_C_READ, NULL);
		if (!bin->dwarf && (bin->debug_elf || !rtl_elf_open_debug_file(bin)))
			bin->dwarf = dwarf_begin_elf(bin->debug_elf, DWARF_C_READ, NULL);
	}
	return bin->dwarf != NULL;
}

/* NAME joined to DIR, with "." and ".." components and repeated slashes
 * removed (lexically, as gcov prints paths), in BIN's name room. */
static const char *join_path(rtl_binary *bin, const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *buf = malloc(dl + nl + 2), *out;
	const char *s;

	if (!buf)
		return NULL;
	snprintf(buf, dl + nl + 2, "%s/%s", dir, name);
	out = buf;
	for (s = buf; *s;) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if ((len == 0 && s != buf) || (len == 1 && s[0] == '.')) {
			/* nothing */
		} else if (len == 2 && s[0] == '.' && s[1] == '.' && out > buf + 1) {
			out--;             /* drop the last component */
			while (out > buf && out[-1] != '/')
				out--;
			if (out > buf + 1)
				out--;     /* and its slash, unless it is the root's */
		} else if (len) {
			if (out > buf && out[-1] != '/')
				*out++ = '/';
			memmove(out, s, len);
			out += len;
		} else {
			out++;             /* the leading slash */
		}
		s += len + (e != NULL);
	}
	*out = 0;
	char *kept = rtl_binary_name_room(bin, (size_t)(out - buf) + 1);
	if (kept)
		memcpy(kept, buf, (size_t)(out - buf) + 1);
	free(buf);
	return kept;
}

static size_t path_slot(const rtl_binary *bin, const char *raw)
{
	size_t k = ((uintptr_t)raw >> 3) * 0x9e3779b97f4a7c15ull;
	size_t mask = bin->capsrc_paths - 1;

	for (k &= mask; bin->src_paths[k].raw && bin->src_paths[k].raw != raw; k = (k + 1) & mask)
		;
	return k;
}

/* FILE as a path from the root: a relative name is relative to the
 * compile unit CU's directory. FILE itself when it cannot be resolved. */
static const char *full_path(rtl_binary *bin, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir, *full;

	if (file[0] == '/')
		return file;
	if (bin->nsrc_paths * 2 >= bin->capsrc_paths) {
		size_t cap = bin->capsrc_paths ? bin->capsrc_paths * 2 : 64;
		struct rtl_src_path *old = bin->src_paths;
		size_t oldcap = bin->capsrc_paths;

		if (!(bin->src_paths = calloc(cap, sizeof(*bin->src_paths)))) {
			bin->src_paths = old;
			return file;
		}
		bin->capsrc_paths = cap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].raw)
				bin->src_paths[path_slot(bin, old[i].raw)] = old[i];
		free(old);
	}
	size_t k = path_slot(bin, file);
	if (bin->src_paths[k].raw)
		return bin->src_paths[k].full;
	if (!dwarf_attr(cu, DW_AT_comp_dir, &attr) || !(dir = dwarf_formstring(&attr)) ||
	    !(full = join_path(bin, dir, file)))
		return file;
	bin->src_paths[k] = (struct rtl_src_path){ file, full };
	bin->nsrc_paths++;
	return full;
}

int rtl_binary_source_line(rtl_binary *bin, uint64_t addr, const char **file, int *line)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	int lineno;
	const char *src;

	if (!rtl_binary_has_source_lines(bin))
		return -ENOENT;
	if (!dwarf_addrdie(bin->dwarf, addr, &cu) || !(l = dwarf_getsrc_die(&cu, addr)))
		return -ENOENT;
	if (dwarf_lineno(l, &lineno) || !(src = dwarf_linesrc(l, NULL, NULL)))
		return -ENOENT;
	*file = full_path(bin, &cu, src);
	*line = lineno;
	return 0;
}

/* The ranges of one compile unit's line table: each row up to the next,
 * except the row that ends a sequence. */
static int unit_ranges(rtl_binary *bin, Dwarf_Die *cu, int (*fn)(const rtl_source_range *r, void *user),
		       void *user)
{
	Dwarf_Lines *lines;
	size_t n;
	bool start = true, discarded = false;
	Dwarf_Addr empty_at = ~(Dwarf_Addr)0;   /* where the last empty range was */

	if (dwarf_getsrclines(cu, &lines, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i), *next;
		Dwarf_Addr a, b;
		bool end = false;
		rtl_source_range r;
		int err;

		if (!l || dwarf_lineaddr(l, &a))
			continue;
		if (start)
			discarded = a == 0 || a == ~(Dwarf_Addr)0;
		dwarf_lineendsequence(l, &end);
		start = end;
		if (end || discarded || i + 1 == n || !(next = dwarf_onesrcline(lines, i + 1)) ||
		    dwarf_lineaddr(next, &b))
			continue;
		if (b <= a) {
			empty_at = a;
			continue;
		}
		if (dwarf_lineno(l, &r.line) || r.line <= 0 || !(r.file = dwarf_linesrc(l, NULL, NULL)))
			continue;
		r.file = full_path(bin, cu, r.file);
		r.addr = a;
		r.end = b;
		r.shared_start = empty_at == a;
		if ((err = fn(&r, user)))
			return err;
	}
	return 0;
}

int rtl_binary_foreach_source_range(rtl_binary *bin,
				    int (*fn)(const rtl_source_range *r, void *user), void *user)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t type;
	int err;

	if (!rtl_binary_has_source_lines(bin))
		return -ENOENT;
	while (!dwarf_get_units(bin->dwarf, cu, &cu, NULL, &type, &cudie, NULL))
		if ((type == DW_UT_compile || type == DW_UT_partial || type == DW_UT_skeleton) &&
		    (err = unit_ranges(bin, &cudie, fn, user)))
			return err;
	return 0;
}

struct name_walk {
	rtl_binary *bin;
	Dwarf_Die *cu;
	int (*fn)(const rtl_source_name *n, void *user);
	void *user;
	int err;
};

static int report_name(struct name_walk *w, Dwarf_Die *die, Dwarf_Addr pc, int is_label)
{
	rtl_source_name n = { pc, 0, NULL, NULL, 0, is_label };
	Dwarf_Attribute attr;
	Dwarf_Addr high;

	if (!is_label) {
		n.name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
		if (!n.name)
			n.name = dwarf_diename(die);
		if (!dwarf_highpc(die, &high) && high > pc)
			n.size = high - pc;
	}
	if (pc == 0 || dwarf_decl_line(die, &n.line) || n.line <= 0 || !(n.file = dwarf_decl_file(die)))
		return 0;
	n.file = full_path(w->bin, w->cu, n.file);
	return w->fn(&n, w->user);
}

/* The labels under DIE (in lexical blocks too, not in inlined code). */
static int walk_labels(struct name_walk *w, Dwarf_Die *die)
{
	Dwarf_Die child;
	int err = 0;

	if (dwarf_child(die, &child))
		return 0;
	do {
		Dwarf_Addr pc;
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_label && !dwarf_lowpc(&child, &pc))
			err = report_name(w, &child, pc, 1);
		else if (tag == DW_TAG_lexical_block)
			err = walk_labels(w, &child);
	} while (!err && !dwarf_siblingof(&child, &child));
	return err;
}

static int one_function(Dwarf_Die *die, void *arg)
{
	struct name_walk *w = arg;
	Dwarf_Addr pc;

	if (dwarf_entrypc(die, &pc) || (w->err = report_name(w, die, pc, 0)) ||
	    (w->err = walk_labels(w, die)))
		return w->err ? DWARF_CB_ABORT : DWARF_CB_OK;
	return DWARF_CB_OK;
}

/* The DIE that holds a unit's functions: a skeleton unit's split unit (its
 * .dwo, when libdw found it), else the unit's own. */
static Dwarf_Die *unit_die(uint8_t type, Dwarf_Die *cudie, Dwarf_Die *subdie)
{
	return type == DW_UT_skeleton && dwarf_tag(subdie) == DW_TAG_compile_unit ? subdie : cudie;
}

/* Calls CB (a dwarf_getfuncs callback) with ARG for every function of
 * every unit of BIN, until *ERR is set; *UNIT (when not NULL) is the unit's
 * DIE meanwhile. *ERR, or -ENOENT without DWARF. */
static int foreach_function(rtl_binary *bin, Dwarf_Die **unit, int (*cb)(Dwarf_Die *fn, void *arg), void *arg,
			    const int *err)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t type;

	if (!rtl_binary_has_source_lines(bin))
		return -ENOENT;
	while (!*err && !dwarf_get_units(bin->dwarf, cu, &cu, NULL, &type, &cudie, &subdie))
		if (type == DW_UT_compile || type == DW_UT_partial || type == DW_UT_skeleton) {
			if (unit)
				*unit = &cudie;
			dwarf_getfuncs(unit_die(type, &cudie, &subdie), cb, arg, 0);
		}
	return *err;
}

int rtl_binary_foreach_source_name(rtl_binary *bin,
				   int (*fn)(const rtl_source_name *n, void *user), void *user)
{
	struct name_walk w = { bin, NULL, fn, user, 0 };
	return foreach_function(bin, &w.cu, one_function, &w, &w.err);
}

struct inline_walk {
	int (*fn)(const rtl_inline_range *r, void *user);
	void *user;
	int err;
};

/* The inlined calls under DIE, DEPTH levels in (lexical blocks and the
 * calls inlined into inlined code too). */
static int walk_inlines(struct inline_walk *w, Dwarf_Die *die, int depth)
{
	Dwarf_Die child;
	int err = 0;

	if (dwarf_child(die, &child))
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_inlined_subroutine) {
			Dwarf_Attribute attr;
			rtl_inline_range r = { 0, 0, NULL, depth + 1 };
			r.name = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_linkage_name, &attr));
			if (!r.name)
				r.name = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_name, &attr));
			Dwarf_Addr base, start, end;
			ptrdiff_t at = 0;
			while (r.name && !err && (at = dwarf_ranges(&child, at, &base, &start, &end)) > 0)
				if (start && end > start) {
					r.addr = start;
					r.end = end;
					err = w->fn(&r, w->user);
				}
			if (!err)
				err = walk_inlines(w, &child, depth + 1);
		} else if (tag == DW_TAG_lexical_block) {
			err = walk_inlines(w, &child, depth);
		}
	} while (!err && !dwarf_siblingof(&child, &child));
	return err;
}

static int inlines_of(Dwarf_Die *die, void *arg)
{
	struct inline_walk *w = arg;
	w->err = walk_inlines(w, die, 0);
	return w->err ? DWARF_CB_ABORT : DWARF_CB_OK;
}

int rtl_binary_foreach_inline_range(rtl_binary *bin,
				    int (*fn)(const rtl_inline_range *r, void *user), void *user)
{
	struct inline_walk w = { fn, user, 0 };
	return foreach_function(bin, NULL, inlines_of, &w, &w.err);
}
