/* Public simulator API (include/reticle/sim.h): lifetime, instrumentation
 * registration, iterators over procedures and static blocks, state access. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <reticle/error.h>
#include "sim/machine.h"
#include "sim/memtrace.h"

int rtl_sim_open(const char *isa, int argc, char **argv, char **envp, struct rtl_sim **out)
{
	return rtl_sim_open_program(isa, argc > 0 ? argv[0] : NULL, argc, argv, envp, out);
}

int rtl_sim_open_program(const char *isa, const char *path, int argc, char **argv, char **envp, struct rtl_sim **out)
{
	struct rtl_sim *m = calloc(1, sizeof *m);
	int err;

	if (!m)
		return -ENOMEM;
	*out = m;
	if (argc < 1 || !path)
		return -EINVAL;
	err = sim_load(m, isa, path, argc, argv, envp);
	if (err < 0)
		return err;
	if (strcmp(m->isa->syscall_abi, "generic") && strcmp(m->isa->syscall_abi, "mips-o32")) {
		snprintf(m->msg, sizeof m->msg, "description %s: unknown syscall_abi '%s'", m->isa->name, m->isa->syscall_abi);
		return -RTL_ERR_BAD_INPUT;
	}
	return 0;
}

void rtl_sim_close(struct rtl_sim *m)
{
	if (!m)
		return;
	if (m->mem)
		munmap(m->mem, m->mem_size + SIM_MEM_SLACK);
	for (size_t i = 0; m->htab && i < m->hsize; i++)
		for (struct block *b = m->htab[i], *n; b; b = n) {
			n = b->hnext;
			free(b);
		}
	free(m->htab);
	for (unsigned i = 0; m->by_id && i < m->isa->ninsn; i++)
		for (struct hook *h = m->by_id[i], *n; h; h = n) {
			n = h->next;
			free(h);
		}
	free(m->by_id);
	for (int i = 0; i < 1024; i++)
		for (struct addr_hook *a = m->addr_hooks[i], *n; a; a = n) {
			n = a->next;
			for (struct hook *h = a->hooks, *hn; h; h = hn) {
				hn = h->next;
				free(h);
			}
			free(a);
		}
	for (struct memhook *h = m->memhooks, *n; h; h = n) {
		n = h->next;
		free(h);
	}
	sim_memtrace_free(m);
	for (struct trailer *t = m->trailers, *n; t; t = n) {
		n = t->next;
		if (!m->ran && t->drop)   /* never run: their state (a profile's temporary file) goes */
			t->drop(t->user);
		free(t);
	}
	for (unsigned i = 0; i < m->nprocs; i++)
		free(m->procs[i].blocks);
	free(m->procs);
	for (unsigned i = 0; i < m->nsyms; i++)
		free(m->syms[i].name);
	free(m->syms);
	for (int i = 0; i < m->ntool_state; i++)
		free(m->tool_state[i]);
	free(m->segs);
	sim_threads_free(m);
	free(m->cpu);
	free(m->path);
	free(m);
}

int rtl_sim_run(struct rtl_sim *m, int *status)
{
	if (m->ran)
		return -EINVAL;   /* once: the trailers ran and freed their state */
	m->ran = 1;
	int err = sim_run(m);
	for (struct trailer *t = m->trailers; t && !m->forked_child; t = t->next)
		t->fn(m, t->user);
	*status = m->exit_status;
	return err;
}

const char *rtl_sim_message(const struct rtl_sim *m) { return m->msg; }
const char *rtl_sim_isa_name(const struct rtl_sim *m) { return m->isa ? m->isa->name : NULL; }

static struct hook *new_hook(rtl_sim_hook_fn fn, void *user, enum rtl_sim_pos pos, struct hook *next)
{
	struct hook *h = calloc(1, sizeof *h);
	if (h)
		*h = (struct hook){ fn, user, pos == RTL_SIM_AFTER, next };
	return h;
}

int rtl_sim_add_call_by_name(struct rtl_sim *m, const char *iname, enum rtl_sim_pos pos, rtl_sim_hook_fn fn, void *user)
{
	int found = 0;

	if (!m->by_id && !(m->by_id = calloc(m->isa->ninsn, sizeof *m->by_id)))
		return -ENOMEM;
	for (unsigned i = 0; i < m->isa->ninsn; i++) {
		if (strcmp(m->isa->names[i], iname))
			continue;
		struct hook *h = new_hook(fn, user, pos, m->by_id[i]);
		if (!h)
			return -ENOMEM;
		m->by_id[i] = h;
		found = 1;
	}
	return found ? 0 : -ENOENT;
}

int rtl_sim_add_call(struct rtl_sim *m, uint64_t addr, enum rtl_sim_pos pos, rtl_sim_hook_fn fn, void *user)
{
	struct addr_hook **slot = &m->addr_hooks[(addr >> 1) % 1024], *a;

	for (a = *slot; a && a->addr != addr; a = a->next)
		;
	if (!a) {
		if (!(a = calloc(1, sizeof *a)))
			return -ENOMEM;
		a->addr = addr;
		a->next = *slot;
		*slot = a;
	}
	struct hook *h = new_hook(fn, user, pos, NULL), **tail = &a->hooks;
	if (!h)
		return -ENOMEM;
	while (*tail)
		tail = &(*tail)->next;
	*tail = h;           /* hooks at one address run in the order added */
	m->any_addr_hooks = 1;
	return 0;
}

int sim_add_trailer_drop(struct rtl_sim *m, rtl_sim_trailer_fn fn, void (*drop)(void *user), void *user)
{
	struct trailer *t = calloc(1, sizeof *t), **tail = &m->trailers;
	if (!t)
		return -ENOMEM;
	t->fn = fn;
	t->drop = drop;
	t->user = user;
	while (*tail)
		tail = &(*tail)->next;
	*tail = t;
	return 0;
}

int rtl_sim_add_trailer(struct rtl_sim *m, rtl_sim_trailer_fn fn, void *user)
{
	return sim_add_trailer_drop(m, fn, NULL, user);
}

int rtl_sim_add_mem_call(struct rtl_sim *m, rtl_sim_mem_fn fn, void *user)
{
	struct memhook *h = calloc(1, sizeof *h), **tail = &m->memhooks;
	if (!h)
		return -ENOMEM;
	h->fn = fn;
	h->user = user;
	while (*tail)
		tail = &(*tail)->next;
	*tail = h;
	return 0;
}

/* ---- static structure: procedures from function symbols, blocks split
 * after every control transfer (the seed's definition) ---------------- */

static int by_addr(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void analyse_proc(struct rtl_sim *m, struct rtl_sim_proc *p)
{
	uint64_t a = p->addr, end = p->addr + p->size, start = a;
	unsigned n = 0;

	while (a < end) {
		struct rtl_sim_pinsn i;
		int ok = m->isa->decode(m->mem + a, end - a, &i) == 0;
		unsigned len = ok ? i.len : m->isa->min_len;
		n++;
		if (ok && (i.flags & RTL_SIM_F_BRANCH) && m->isa->delay_slots && a + len < end) {
			a += len;   /* the delay slot ends the block */
			ok = m->isa->decode(m->mem + a, end - a, &i) == 0;
			len = ok ? i.len : m->isa->min_len;
			n++;
			p->blocks = realloc(p->blocks, sizeof(*p->blocks) * (p->nblocks + 1));
			p->blocks[p->nblocks++] = (struct rtl_sim_block){ start, a, n, p };
			start = a + len;
			n = 0;
			a += len;
			continue;
		}
		if (!ok || (i.flags & (RTL_SIM_F_BRANCH | RTL_SIM_F_TRAP)) || a + len >= end) {
			p->blocks = realloc(p->blocks, sizeof(*p->blocks) * (p->nblocks + 1));
			p->blocks[p->nblocks++] = (struct rtl_sim_block){ start, a, n, p };
			start = a + len;
			n = 0;
		}
		a += len;
	}
}

int sim_analyse(struct rtl_sim *m)
{
	if (m->analysed)
		return 0;
	m->analysed = 1;
	qsort(m->syms, m->nsyms, sizeof *m->syms, by_addr);
	if (!m->nsyms) {
		/* stripped: each executable segment is one pseudo-procedure */
		for (int i = 0; i < m->nsegs; i++) {
			if (!(m->segs[i].flags & 1 /* PF_X */))
				continue;
			m->syms = realloc(m->syms, sizeof *m->syms * (m->nsyms + 1));
			char name[40];
			snprintf(name, sizeof name, "segment@0x%llx", (unsigned long long)m->segs[i].vaddr);
			m->syms[m->nsyms++] = (struct sym){ m->segs[i].vaddr, m->segs[i].filesz, strdup(name) };
		}
	}
	m->procs = calloc(m->nsyms + 1, sizeof *m->procs);
	for (unsigned i = 0; i < m->nsyms; i++) {
		struct sym *s = &m->syms[i];
		if (!s->size || (i && m->syms[i - 1].addr == s->addr))
			continue;   /* aliases: one procedure per address */
		struct rtl_sim_proc *p = &m->procs[m->nprocs++];
		p->name = s->name;
		p->addr = s->addr;
		p->size = s->size;
		p->sim = m;
	}
	return 0;
}

static const struct rtl_sim_proc *blocks_of(const struct rtl_sim_proc *cp)
{
	struct rtl_sim_proc *p = (struct rtl_sim_proc *)cp;   /* owned by the simulator */
	if (!p->analysed) {
		p->analysed = 1;
		analyse_proc(p->sim, p);
	}
	return p;
}

const struct rtl_sim_proc *rtl_sim_proc_at(struct rtl_sim *m, uint64_t addr)
{
	unsigned lo = 0, hi;
	sim_analyse(m);
	hi = m->nprocs;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (m->procs[mid].addr + m->procs[mid].size <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nprocs && m->procs[lo].addr <= addr ? &m->procs[lo] : NULL;
}

const struct rtl_sim_proc *rtl_sim_first_proc(struct rtl_sim *m)
{
	sim_analyse(m);
	return m->nprocs ? &m->procs[0] : NULL;
}

const struct rtl_sim_proc *rtl_sim_next_proc(struct rtl_sim *m, const struct rtl_sim_proc *p)
{
	return p + 1 < m->procs + m->nprocs ? p + 1 : NULL;
}

const struct rtl_sim_block *rtl_sim_first_block(struct rtl_sim *m, const struct rtl_sim_proc *p)
{
	p = blocks_of(p);
	return p->nblocks ? &p->blocks[0] : NULL;
}

const struct rtl_sim_block *rtl_sim_next_block(struct rtl_sim *m, const struct rtl_sim_block *b)
{
	const struct rtl_sim_proc *p = b->proc;
	return b + 1 < p->blocks + p->nblocks ? b + 1 : NULL;
}

uint64_t rtl_sim_last_insn(const struct rtl_sim_block *b) { return b->last; }
const char *rtl_sim_proc_name(const struct rtl_sim_proc *p) { return p->name; }
uint64_t rtl_sim_proc_addr(const struct rtl_sim_proc *p) { return p->addr; }
uint64_t rtl_sim_block_addr(const struct rtl_sim_block *b) { return b->addr; }
unsigned rtl_sim_block_ninsns(const struct rtl_sim_block *b) { return b->ninsn; }
const struct rtl_sim_proc *rtl_sim_block_proc(const struct rtl_sim_block *b) { return b->proc; }

uint64_t rtl_sim_insn_addr(const struct rtl_sim_insn *i) { return ((const struct rtl_sim_pinsn *)i)->addr; }
unsigned rtl_sim_insn_len(const struct rtl_sim_insn *i) { return ((const struct rtl_sim_pinsn *)i)->len; }
const char *rtl_sim_insn_name(struct rtl_sim *m, const struct rtl_sim_insn *i)
{
	return m->isa->names[((const struct rtl_sim_pinsn *)i)->id];
}
int rtl_sim_insn_is_branch(const struct rtl_sim_insn *i)
{
	return (((const struct rtl_sim_pinsn *)i)->flags & RTL_SIM_F_BRANCH) != 0;
}
int rtl_sim_insn_is_cond_branch(const struct rtl_sim_insn *i)
{
	return (((const struct rtl_sim_pinsn *)i)->flags & RTL_SIM_F_COND) != 0;
}

/* N bytes of guest memory at ADDR into BUF through the kernel: a page the
 * guest never mapped is -EFAULT, not a fault of the caller's (a script's
 * question about any address). */
static int copy_guest(struct rtl_sim *m, uint64_t addr, void *buf, size_t n)
{
	if (addr >= m->mem_size || n > m->mem_size - addr)
		return -EFAULT;
	struct iovec to = { buf, n }, from = { m->mem + addr, n };
	return process_vm_readv(getpid(), &to, 1, &from, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

int rtl_sim_disasm(struct rtl_sim *m, uint64_t addr, char *buf, size_t n)
{
	struct rtl_sim_pinsn p;
	uint8_t code[16];
	size_t len = m->isa->max_len < sizeof(code) ? m->isa->max_len : sizeof(code);
	if (copy_guest(m, addr, code, len) && copy_guest(m, addr, code, len = m->isa->min_len))
		len = 0;   /* a short instruction may end its mapping */
	if (!len || m->isa->decode(code, len, &p) < 0) {
		snprintf(buf, n, "(undecodable)");
		return -RTL_ERR_DECODE;
	}
	p.addr = addr;
	m->isa->disasm(&p, buf, n);
	return p.len;
}

uint64_t rtl_sim_pc(struct rtl_sim *m) { return m->cpu->pc; }
uint64_t rtl_sim_icount(struct rtl_sim *m) { return m->icount; }

int rtl_sim_reg(struct rtl_sim *m, const char *file, unsigned index, uint64_t *value)
{
	char spec[48];
	unsigned size;
	snprintf(spec, sizeof spec, "%s[%u]", file, index);
	uint64_t *p = sim_reg_ptr(m, spec, &size);
	if (!p)
		return -ENOENT;
	*value = 0;
	memcpy(value, p, size);
	return 0;
}

int rtl_sim_read_mem(struct rtl_sim *m, uint64_t addr, void *buf, size_t n)
{
	return copy_guest(m, addr, buf, n);
}

/* For the built-in mix tool: the description's instruction names. */
int rtl_sim_insn_names(struct rtl_sim *m, const char *const **names)
{
	*names = m->isa->names;
	return (int)m->isa->ninsn;
}

int rtl_sim_add_block_call(struct rtl_sim *m, const struct rtl_sim_block *b, enum rtl_sim_pos pos,
			   rtl_sim_hook_fn fn, void *user)
{
	return rtl_sim_add_call(m, pos == RTL_SIM_BEFORE ? b->addr : b->last, pos, fn, user);
}

int rtl_sim_add_proc_call(struct rtl_sim *m, const struct rtl_sim_proc *p, enum rtl_sim_pos pos,
			  rtl_sim_hook_fn fn, void *user)
{
	if (pos != RTL_SIM_BEFORE)
		return -ENOTSUP;
	return rtl_sim_add_call(m, p->addr, RTL_SIM_BEFORE, fn, user);
}

const struct rtl_sim_proc *rtl_sim_find_proc(struct rtl_sim *m, const char *name)
{
	for (const struct rtl_sim_proc *p = rtl_sim_first_proc(m); p; p = rtl_sim_next_proc(m, p))
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}
