/* The debugger's side of a session (debug.h): breakpoints written into
 * the copies, stops handed to the debugger's callback, and what it asks
 * about a stopped thread in the program's own addresses. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "engine/debug.h"
#include "engine/engine.h"
#include "isa/x86_64/insn.h"
#include "isa/x86_64/relocate.h"
#include "os/linux/os.h"
#include "os/linux/perf_ring.h"
#include "probe/lang.h"
#include "sample/sample.h"
#include "util/array.h"

struct bp {
	int id;
	char *func;        /* a pattern, or NULL: ADDR */
	uint64_t addr;     /* original, main process */
	unsigned hits;
};

/* An int3 written for a breakpoint: in a copy (shared by a process and
 * the children it forks), or in original code that has no copy. */
struct site {
	int bp;            /* 0: nexti's stop at a return point */
	uint64_t at;
	uint8_t saved;
	pid_t pid;         /* whose memory, for a site in original code */
	bool in_copy;
	pid_t tid;         /* nexti's: its thread, back at its stack pointer */
	uint64_t sp;
};

struct debugger {
	debug_fn fn;
	void *ctx;
	bool faults_only;
	struct bp *bps;
	size_t nbps, capbps;
	struct site *sites;
	size_t nsites, capsites;
	int next_id;
	struct unw_mods *unw;
	/* where deleted breakpoints were: a thread that met one just before
	 * is still to be served (its SIGTRAP comes after the deletion) */
	uint64_t *gone;
	size_t ngone, capgone;
};

bool debug_on(const struct rtl_session *s)
{
	return session_debugger((struct rtl_session *)s) != NULL;
}

int debug_attach_to_session(struct rtl_session *s, debug_fn fn, void *ctx, bool faults_only)
{
	struct debugger *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	*d = (struct debugger){ .fn = fn, .ctx = ctx, .faults_only = faults_only, .next_id = 1 };
	session_set_debugger(s, d);
	return 0;
}

void debug_free(struct rtl_session *s)
{
	struct debugger *d = session_debugger(s);
	if (!d)
		return;
	for (size_t i = 0; i < d->nbps; i++)
		free(d->bps[i].func);
	free(d->bps);
	free(d->sites);
	free(d->gone);
	if (d->unw)
		unw_mods_free(d->unw);
	free(d);
	session_set_debugger(s, NULL);
}

/* ---- where things are ---- */

/* Where original instruction ORIG starts in FS's copy, 0 if it has none. */
static uint64_t copy_of(const struct func_state *fs, uint64_t orig)
{
	return x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, orig);
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

uint64_t debug_where(struct rtl_session *s, pid_t pid, uint64_t pc, char *desc, size_t len)
{
	struct proc *p = session_proc(s, pid);
	struct module *m;
	if (!p) {
		snprintf(desc, len, "%#llx", (unsigned long long)pc);
		return pc;
	}
	uint64_t orig = pc;
	const char *in = "";
	struct copy_map c;
	if (copy_map_at(p, pc, &c)) {
		size_t i = copy_map_index(&c, pc);
		orig = c.to[i] == pc ? c.from[i] : 0;
		in = orig ? ", in its copy" : ", in its copy's own code";
		if (!orig) {   /* snippet code: named by the instruction it serves */
			const rtl_function *f = rtl_binary_function(c.m->bin, c.k);
			snprintf(desc, len, "%s+%#llx (%s%s)", f->name ? f->name : "?",
				 (unsigned long long)(c.from[i] - (f->addr + c.m->bias)), base_name(c.m->path), in);
			return 0;
		}
	}
	const rtl_function *f = proc_function_at(p, orig, &m);
	if (f)
		snprintf(desc, len, "%s+%#llx (%s%s)", f->name ? f->name : "?",
			 (unsigned long long)(orig - (f->addr + m->bias)), base_name(m->path), in);
	else if (m)
		snprintf(desc, len, "%s+%#llx", base_name(m->path), (unsigned long long)(orig - m->bias));
	else
		snprintf(desc, len, "%#llx", (unsigned long long)orig);
	return orig;
}

static struct site *site_at(struct debugger *d, struct proc *p, uint64_t at);

int debug_read(struct rtl_session *s, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct proc *p = session_proc(s, pid);
	if (!p)
		return -ESRCH;
	/* a module's read-only bytes as its file has them: the process's text
	 * has reticle's int3s and jumps at entries */
	struct module *m = proc_module_at(p, addr);
	if (m && proc_module_at(p, addr + len - 1) == m &&
	    rtl_binary_is_readonly(m->bin, addr - m->bias, len) &&
	    !rtl_binary_has_textrel(m->bin) && !rtl_binary_read(m->bin, addr - m->bias, buf, len))
		return 0;
	int err = os_mem_read(p->mem, addr, buf, len);
	struct debugger *d = session_debugger(s);
	for (size_t i = 0; !err && d && i < len; i++) {   /* the breakpoints' int3s hidden */
		const struct site *st = ((uint8_t *)buf)[i] == 0xcc ? site_at(d, p, addr + i) : NULL;
		if (st)
			((uint8_t *)buf)[i] = st->saved;
	}
	return err;
}

int debug_function(struct rtl_session *s, pid_t pid, const char *func, uint64_t pc, const char **name,
		   uint64_t *orig, size_t *size, uint64_t *copy, size_t *copy_len)
{
	struct proc *p = session_proc(s, pid);
	if (!p)
		return -ESRCH;
	struct module *m = NULL;
	const rtl_function *f = NULL;
	if (func) {
		for (size_t i = 0; i < p->nmods && !f; i++) {
			struct module *mm = &p->mods[i];
			if (mm->unloaded)
				continue;
			for (size_t k = 0; k < rtl_binary_function_count(mm->bin) && !f; k++) {
				const rtl_function *c = rtl_binary_function(mm->bin, k);
				if (c->name && probe_name_matches(func, c->name)) {
					f = c;
					m = mm;
				}
			}
		}
	} else {
		f = proc_function_at(p, pc, &m);
	}
	if (!f)
		return -ENOENT;
	const struct func_state *fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
	*name = f->name;
	*orig = f->addr + m->bias;
	*size = f->size;
	*copy = fs->status == FS_DONE ? fs->entry : 0;
	*copy_len = fs->status == FS_DONE ? fs->code_len : 0;
	return 0;
}

uint64_t debug_copy_of(struct rtl_session *s, pid_t pid, uint64_t fn_orig, uint64_t orig)
{
	struct proc *p = session_proc(s, pid);
	struct module *m;
	const struct func_state *fs = p ? proc_entry_at(p, fn_orig, &m, NULL) : NULL;
	return fs && fs->status == FS_DONE ? copy_of(fs, orig) : 0;
}

/* ---- breakpoints ---- */

static bool bp_names(const struct bp *b, const struct module *m, const rtl_function *f, uint64_t *orig)
{
	uint64_t lo = f->addr + m->bias;
	if (b->func) {
		*orig = lo;
		return f->name && probe_name_matches(b->func, f->name);
	}
	*orig = b->addr;
	return b->addr >= lo && b->addr < lo + (f->size ? f->size : 1);
}

static int put_site(struct debugger *d, struct proc *p, int bp, uint64_t at, bool in_copy)
{
	for (size_t i = 0; i < d->nsites; i++)
		if (d->sites[i].at == at && d->sites[i].bp == bp && bp)
			return 0;
	uint8_t old;
	if (in_copy && !proc_window_at(p, at, 1))
		return -ENOENT;
	if (rtl_grow(&d->sites, &d->capsites, d->nsites + 1, sizeof(*d->sites)))
		return -ENOMEM;
	for (size_t i = 0; i < d->nsites; i++)
		if (d->sites[i].at == at) {   /* another breakpoint's int3 is there */
			d->sites[d->nsites++] = (struct site){ bp, at, d->sites[i].saved, p->pid, in_copy, 0, 0 };
			return 0;
		}
	if (os_mem_read(p->mem, at, &old, 1) || proc_code_write(p, at, 0xcc, true))
		return -EFAULT;
	d->sites[d->nsites++] = (struct site){ bp, at, old, p->pid, in_copy, 0, 0 };
	return 0;
}

/* Removes site I (P: its process, NULL when gone), its int3 too when no
 * other site is at its place; a thread that met that int3 just before is
 * still to be served (its SIGTRAP comes after: debug_trap). */
static void drop_site(struct debugger *d, struct proc *p, size_t i)
{
	struct site st = d->sites[i];
	d->sites[i] = d->sites[--d->nsites];
	for (size_t j = 0; j < d->nsites; j++)
		if (d->sites[j].at == st.at)
			return;
	if (!rtl_grow(&d->gone, &d->capgone, d->ngone + 1, sizeof(*d->gone)))
		d->gone[d->ngone++] = st.at;
	if (p)
		proc_code_write(p, st.at, st.saved, true);
}

/* Writes breakpoint B into function K of M (its copy, or its original
 * code when it will never have one). */
static void place(struct debugger *d, struct proc *p, struct module *m, size_t k, const struct bp *b)
{
	const rtl_function *f = rtl_binary_function(m->bin, k);
	const struct func_state *fs = &m->fs[k];
	uint64_t orig;
	if (!bp_names(b, m, f, &orig))
		return;
	if (fs->entry && fs->nmap) {   /* a copy (its status is set once it is in place) */
		uint64_t at = copy_of(fs, orig);
		if (at)
			put_site(d, p, b->id, at, true);
	} else if (fs->status != FS_ARMED && fs->status != FS_BUSY && fs->status != FS_NOTIFY) {
		put_site(d, p, b->id, orig, false);   /* runs as it is */
	}
}

void debug_relocated(struct proc *p, struct module *m, size_t k)
{
	struct debugger *d = session_debugger(p->s);
	for (size_t i = 0; d && i < d->nbps; i++)
		place(d, p, m, k, &d->bps[i]);
}

int debug_break_add(struct rtl_session *s, const char *func, uint64_t addr, int *id)
{
	struct debugger *d = session_debugger(s);
	if (!d)
		return -EINVAL;
	if (rtl_grow(&d->bps, &d->capbps, d->nbps + 1, sizeof(*d->bps)))
		return -ENOMEM;
	struct bp b = { d->next_id, func ? strdup(func) : NULL, addr, 0 };
	if (func && !b.func)
		return -ENOMEM;
	d->bps[d->nbps++] = b;
	*id = d->next_id++;
	/* the functions that have copies already, in every process */
	for (size_t i = 0; i < session_proc_count(s); i++) {
		struct proc *p = session_proc_at(s, i);
		for (size_t mi = 0; mi < p->nmods; mi++) {
			struct module *m = &p->mods[mi];
			if (m->unloaded || !m->fs)
				continue;
			if (!func) {   /* one function: the one at ADDR */
				struct module *am;
				const rtl_function *f = proc_function_at(p, addr, &am);
				if (f && am == m)
					place(d, p, m, (size_t)(f - rtl_binary_function(m->bin, 0)), &b);
				continue;
			}
			for (size_t k = 0; k < rtl_binary_function_count(m->bin); k++)
				place(d, p, m, k, &b);
		}
	}
	return 0;
}

int debug_break_delete(struct rtl_session *s, int id)
{
	struct debugger *d = session_debugger(s);
	size_t i = 0;
	while (d && i < d->nbps && d->bps[i].id != id)
		i++;
	if (!d || i == d->nbps)
		return -ENOENT;
	free(d->bps[i].func);
	d->bps[i] = d->bps[--d->nbps];
	for (size_t k = d->nsites; k-- > 0;) {
		if (d->sites[k].bp == id)
			drop_site(d, session_proc(s, d->sites[k].pid), k);
	}
	return 0;
}

bool debug_break_info(struct rtl_session *s, size_t i, int *id, const char **func, uint64_t *addr,
		      unsigned *hits, size_t *sites)
{
	struct debugger *d = session_debugger(s);
	if (!d || i >= d->nbps)
		return false;
	*id = d->bps[i].id;
	*func = d->bps[i].func;
	*addr = d->bps[i].addr;
	*hits = d->bps[i].hits;
	*sites = 0;
	for (size_t k = 0; k < d->nsites; k++)
		*sites += d->sites[k].bp == *id;
	return true;
}

static struct site *site_at(struct debugger *d, struct proc *p, uint64_t at)
{
	for (size_t i = 0; i < d->nsites; i++)
		if (d->sites[i].at == at && (d->sites[i].in_copy || d->sites[i].pid == p->pid))
			return &d->sites[i];
	return NULL;
}

/* One instruction of TID from PC, over a breakpoint's int3 there. */
static int step_over(struct debugger *d, struct proc *p, pid_t tid, uint64_t pc, int *sig)
{
	const struct site *st = site_at(d, p, pc);
	return st ? proc_step_over(p, tid, pc, st->saved, sig) : proc_singlestep(p, tid, sig);
}

int debug_stepi(struct rtl_session *s, pid_t tid, int *sig)
{
	struct debugger *d = session_debugger(s);
	struct proc *p = session_proc(s, tid);
	uint64_t pc;
	*sig = 0;
	if (!d || !p || os_get_pc(tid, &pc))
		return -ESRCH;
	int err = step_over(d, p, tid, pc, sig);
	if (err || *sig != SIGTRAP)
		return err;
	*sig = 0;
	/* it ran an int3: a breakpoint's (stop on it), or reticle's own (a
	 * first call, a return into original code: served, as when running) */
	uint64_t now;
	uint8_t b = 0;
	if (os_get_pc(tid, &now) || os_mem_read(p->mem, now - 1, &b, 1) || b != 0xcc)
		return 0;
	if (site_at(d, p, now - 1))
		return os_set_pc(tid, now - 1);
	if (!engine_breakpoint(p, tid, now))
		*sig = SIGTRAP;   /* the program's own int3 */
	return 0;
}

int debug_nexti(struct rtl_session *s, pid_t tid, int *sig)
{
	struct debugger *d = session_debugger(s);
	struct proc *p = session_proc(s, tid);
	uint64_t pc, sp;
	char desc[256];
	*sig = 0;
	if (!d || !p || os_get_pc(tid, &pc) || os_get_sp(tid, &sp))
		return -ESRCH;
	/* the original instruction the thread is at: a call? */
	uint64_t orig = debug_where(s, p->pid, pc, desc, sizeof(desc));
	uint8_t code[16];
	struct x86_insn in;
	struct module *m;
	const rtl_function *f = orig ? proc_function_at(p, orig, &m) : NULL;
	if (!f || debug_read(s, p->pid, orig, code, sizeof(code)) || x86_decode(code, sizeof(code), orig, &in) ||
	    (in.kind != X86_CALL && in.kind != X86_ICALL))
		return debug_stepi(s, tid, sig);
	const struct func_state *fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
	uint64_t back = orig + in.len, at = fs->entry && fs->nmap ? copy_of(fs, back) : back;
	if (!at || put_site(d, p, 0, at, at != back))
		return debug_stepi(s, tid, sig);
	d->sites[d->nsites - 1].tid = tid;
	d->sites[d->nsites - 1].sp = sp;
	return 1;   /* the thread runs on until it is back */
}

void debug_start(struct rtl_session *s, struct proc *p, pid_t tid)
{
	struct debugger *d = session_debugger(s);
	if (d && !d->faults_only)
		d->fn(d->ctx, s, &(struct debug_stop){ DEBUG_START, p->pid, tid, 0, 0 });
}

bool debug_trap(struct rtl_session *s, struct proc *p, pid_t tid, uint64_t pc)
{
	struct debugger *d = session_debugger(s);
	struct site *st = d ? site_at(d, p, pc - 1) : NULL;
	if (!st) {   /* a deleted breakpoint's int3, met before it went */
		uint8_t b = 0xcc;
		for (size_t i = 0; d && i < d->ngone; i++)
			if (d->gone[i] == pc - 1 && !os_mem_read(p->mem, pc - 1, &b, 1) && b != 0xcc)
				return !os_set_pc(tid, pc - 1);
		return false;
	}
	int id = st->bp;
	os_set_pc(tid, pc - 1);
	if (!id) {   /* nexti's return point: its thread, back in its frame */
		uint64_t sp;
		size_t k = (size_t)(st - d->sites);
		if (st->tid != tid || os_get_sp(tid, &sp) || sp < st->sp) {
			int sig = 0;
			step_over(d, p, tid, pc - 1, &sig);
			return true;
		}
		drop_site(d, p, k);
		d->fn(d->ctx, s, &(struct debug_stop){ DEBUG_BREAK, p->pid, tid, 0, 0 });
		uint64_t now;
		int sig = 0;
		if (!os_get_pc(tid, &now) && site_at(d, p, now))
			step_over(d, p, tid, now, &sig);
		return true;
	}
	for (size_t i = 0; i < d->nbps; i++)
		if (d->bps[i].id == id)
			d->bps[i].hits++;
	d->fn(d->ctx, s, &(struct debug_stop){ DEBUG_BREAK, p->pid, tid, id, 0 });
	/* on past the int3, unless the thread went elsewhere or is gone */
	uint64_t now;
	int sig = 0;
	if (!os_get_pc(tid, &now) && site_at(d, p, now))
		step_over(d, p, tid, now, &sig);
	return true;
}

void debug_fault(struct rtl_session *s, struct proc *p, pid_t tid, int sig)
{
	struct debugger *d = session_debugger(s);
	if (d)
		d->fn(d->ctx, s, &(struct debug_stop){ DEBUG_FAULT, p->pid, tid, 0, sig });
}

/* ---- backtrace ---- */

size_t debug_backtrace(struct rtl_session *s, pid_t tid, uint64_t *frames, size_t max)
{
	struct debugger *d = session_debugger(s);
	struct proc *p = session_proc(s, tid);
	if (!d || !p || (!d->unw && !(d->unw = unw_mods_new())))
		return 0;
	return stack_walk(p, tid, d->unw, frames, NULL, max);
}
