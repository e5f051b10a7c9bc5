/* Source lines from DWARF (.debug_line) through libdw, opened on first use
 * over the same libelf handle, or over the separate debug file's (Debian's
 * -dbg/-dbgsym packages) when the binary has no DWARF of its own. */
#include <errno.h>
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
	*file = src;
	*line = lineno;
	return 0;
}
