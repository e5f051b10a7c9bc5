/* Following the dynamic loader: _r_debug's link_map list tells which shared
 * objects are mapped where; the loader calls r_brk (_dl_debug_state) after
 * each change, and reticle keeps an int3 there. */
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "engine/span.h"
#include "engine/symbol.h"
#include "os/linux/os.h"
#include "util/log.h"

/* Start of the dynamic loader's module (the one holding r_brk). */
static uint64_t proc_ldso_lo(struct proc *p)
{
	struct module *m = proc_module_at(p, p->r_brk);
	return m ? m->lo : 0;
}

void dl_find_r_debug(struct proc *p, struct module *ldso)
{
	if (ldso && !p->r_debug) {
		uint64_t a;
		if (!elf_symbol_lookup(ldso->path, "_r_debug", &a))
			p->r_debug = a + ldso->bias;
	}
	if (p->r_debug && !p->r_brk) {
		uint64_t brk = 0;
		if (!os_mem_read(p->mem, p->r_debug + offsetof(struct r_debug, r_brk), &brk, 8))
			p->r_brk = brk;
	}
}

static struct module *known(struct proc *p, const char *path, uint64_t bias)
{
	for (size_t i = 0; i < p->nmods; i++)
		if (p->mods[i].bias == bias && !p->mods[i].unloaded && !strcmp(p->mods[i].path, path))
			return &p->mods[i];
	return NULL;
}

static int read_string(struct proc *p, uint64_t addr, char *buf, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		char chunk[64];
		if (os_mem_read(p->mem, addr + n, chunk, sizeof(chunk)) &&
		    os_mem_read(p->mem, addr + n, chunk, 1))
			return -1;
		for (size_t k = 0; k < sizeof(chunk) && n + 1 < len; k++) {
			buf[n++] = chunk[k];
			if (!chunk[k])
				return 0;
		}
	}
	buf[len - 1] = 0;
	return 0;
}

/* The file mapped at ADDR in the target, from /proc/PID/maps: a link_map
 * name can be relative (LD_PRELOAD=./x.so, dlopen("./x.so")) to a working
 * directory that may have changed since. */
static int mapped_path(struct proc *p, uint64_t addr, char *out, size_t len)
{
	char line[4096 + 128];
	int at = 0;
	if (os_map_line(p->pid, addr, line, sizeof(line)) ||
	    sscanf(line, "%*s %*s %*s %*s %*s %n", &at) < 0 || !at || line[at] != '/' ||
	    strlen(line + at) >= len || strstr(line + at, " (deleted)"))
		return -1;
	strcpy(out, line + at);
	return 0;
}

/* Adds every object on the link_map list that reticle does not know yet,
 * and forgets those no longer on it (dlclose): another object may be mapped
 * at their addresses next. The executable and the loader are never listed
 * by path here, so they stay. */
static void scan_link_map(struct proc *p, pid_t tid)
{
	uint64_t lm = 0;
	size_t nmods = p->nmods;
	bool *seen = calloc(nmods + 1, 1);
	/* an empty list: the loader has not set it up yet (a process attached
	 * to as it starts), and nothing was unloaded */
	if (!seen || os_mem_read(p->mem, p->r_debug + offsetof(struct r_debug, r_map), &lm, 8) || !lm) {
		free(seen);
		return;
	}
	for (int guard = 0; lm && guard < 100000; guard++) {
		struct link_map l;
		char path[4096];
		if (os_mem_read(p->mem, lm, &l, sizeof(l)))
			break;
		lm = (uint64_t)l.l_next;
		if (!l.l_name || read_string(p, (uint64_t)l.l_name, path, sizeof(path)) || !path[0])
			continue;   /* the executable */
		if (path[0] != '/' && (!l.l_ld || mapped_path(p, (uint64_t)l.l_ld, path, sizeof(path))))
			continue;   /* the vdso, or nothing mapped from a file */
		struct module *m = known(p, path, l.l_addr);
		if (m) {
			if ((size_t)(m - p->mods) < nmods)
				seen[m - p->mods] = true;
			continue;
		}
		int err = proc_add_module(p, tid, path, l.l_addr, false);
		if (err)
			rtl_warn("%s: not instrumented (%d)", path, err);
	}
	for (size_t i = 0; i < nmods; i++) {
		struct module *m = &p->mods[i];
		if (!seen[i] && !m->is_main && m->lo != proc_ldso_lo(p) && !proc_is_loader(p, m)) {
			m->unloaded = true;
			proc_forget_functions(p);
			rtl_debug("%s unloaded", m->path);
		}
	}
	free(seen);
}

void dl_scan(struct proc *p, pid_t tid)
{
	int state = 0;
	if (p->r_debug && !os_mem_read(p->mem, p->r_debug + offsetof(struct r_debug, r_state), &state, 4) &&
	    state == RT_CONSISTENT)
		scan_link_map(p, tid);
}

int dl_notify(struct proc *p, pid_t tid)
{
	uint8_t code[4] = { 0 };

	size_t before = p->nmods;
	dl_scan(p, tid);
	if (p->nmods > before && p->warm_started)
		span_event(p, SPAN_DLOPEN, 0);
	/* Step over r_brk's first instruction without removing the int3:
	 * _dl_debug_state is 'endbr64; ret' or 'ret'. */
	struct module *m = proc_module_at(p, p->r_brk);
	if (!m || rtl_binary_read(m->bin, p->r_brk - m->bias, code, 4))
		return 0;
	if (code[0] == 0xc3 || (code[0] == 0xf3 && code[1] == 0xc3))
		return os_emulate_ret(tid) ? 0 : 1;
	if (!memcmp(code, "\xf3\x0f\x1e\xfa", 4))
		return os_set_pc(tid, p->r_brk + 4) ? 0 : 1;
	rtl_warn("the dynamic loader's r_brk starts with an unexpected instruction; dlopen is not followed");
	return 0;
}
