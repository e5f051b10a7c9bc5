/* The separate debug file of a stripped binary (Debian's -dbg and -dbgsym
 * packages): found through the build-id (/usr/lib/debug/.build-id/xx/
 * yyyy.debug) or .gnu_debuglink (beside the binary, in its .debug/ folder,
 * or under /usr/lib/debug/ as gdb looks), and used only when its build-id
 * is the binary's; where none is on disk and $DEBUGINFOD_URLS names
 * servers, asked of them through elfutils' debuginfod client (loaded only
 * then, so that a run without it pays nothing). Its .symtab names what
 * .dynsym does not (_int_malloc, __memmove_avx512_unaligned_erms);
 * addresses are the binary's own. */
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "binary_internal.h"
#include "util/log.h"

/* $RETICLE_DEBUG_DIR (colon-separated) first, then /usr/lib/debug. */
static const char *debug_root(size_t i, char *buf, size_t len)
{
	const char *env = getenv("RETICLE_DEBUG_DIR");
	size_t k = 0;
	for (const char *s = env; s && *s; k++) {
		const char *e = strchr(s, ':');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (k == i) {
			snprintf(buf, len, "%.*s", (int)n, s);
			return buf;
		}
		s = e ? e + 1 : s + n;
	}
	return i == k ? "/usr/lib/debug" : NULL;
}

/* Opens PATH as the debug file of BIN when its build-id is BIN's (or, with
 * no build-id in BIN, when it is an ELF file at all). */
static int try_open(rtl_binary *bin, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t mine_len, theirs_len;
	const unsigned char *mine = rtl_elf_build_id(bin->elf, &mine_len);
	const unsigned char *theirs = e && elf_kind(e) == ELF_K_ELF ? rtl_elf_build_id(e, &theirs_len) : NULL;
	if (!e || elf_kind(e) != ELF_K_ELF ||
	    (mine && (!theirs || theirs_len != mine_len || memcmp(mine, theirs, mine_len)))) {
		rtl_debug("%s: %s is not its debug file (build-id differs)", bin->path, path);
		if (e)
			elf_end(e);
		close(fd);
		return -1;
	}
	bin->debug_elf = e;
	bin->debug_fd = fd;
	bin->debug_image = (const unsigned char *)elf_rawfile(e, &bin->debug_image_size);
	if (!bin->debug_image) {
		elf_end(e);
		close(fd);
		bin->debug_elf = NULL;
		bin->debug_fd = -1;
		return -1;
	}
	free(bin->debug_path);
	bin->debug_path = strdup(path);
	rtl_debug("%s: names from %s", bin->path, path);
	return 0;
}

/* elfutils' client, from its library: it brings libcurl, which a run
 * without servers should not load. */
static struct {
	debuginfod_client *(*begin)(void);
	int (*find)(debuginfod_client *c, const unsigned char *id, int len, char **path);
	void (*set_progress)(debuginfod_client *c, debuginfod_progressfn_t fn);
	void (*set_user)(debuginfod_client *c, void *value);
	void *(*get_user)(debuginfod_client *c);
	void (*end)(debuginfod_client *c);
} dbgd;
static pthread_once_t dbgd_once = PTHREAD_ONCE_INIT;

static void dbgd_load(void)
{
	void *lib = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		rtl_debug("debuginfod: %s", dlerror());
		return;
	}
	*(void **)&dbgd.find = dlsym(lib, "debuginfod_find_debuginfo");
	*(void **)&dbgd.set_progress = dlsym(lib, "debuginfod_set_progressfn");
	*(void **)&dbgd.set_user = dlsym(lib, "debuginfod_set_user_data");
	*(void **)&dbgd.get_user = dlsym(lib, "debuginfod_get_user_data");
	*(void **)&dbgd.end = dlsym(lib, "debuginfod_end");
	if (dbgd.find && dbgd.set_progress && dbgd.set_user && dbgd.get_user && dbgd.end)
		*(void **)&dbgd.begin = dlsym(lib, "debuginfod_begin");
}

/* A download under way says so once, on its first news of a size: it can
 * take seconds where a lookup in the client's cache takes none. */
static int dbgd_progress(debuginfod_client *c, long done, long total)
{
	const char **path = dbgd.get_user(c);
	if (*path && total > 0 && done < total) {
		rtl_info("%s: downloading its debug information (%ld KiB) from debuginfod", *path,
			 (total + 1023) / 1024);
		*path = NULL;
	}
	return 0;
}

/* Whether $DEBUGINFOD_URLS names servers. */
static bool debuginfod_named(void)
{
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	return urls && urls[strspn(urls, " \t")];
}

/* The debug file of build-id ID from debuginfod servers, when
 * $DEBUGINFOD_URLS names some (the client keeps what it fetched, and what
 * it did not find, in its cache: $DEBUGINFOD_CACHE_PATH). */
static int try_debuginfod(rtl_binary *bin, const unsigned char *id, size_t idlen)
{
	if (!debuginfod_named())
		return -1;
	pthread_once(&dbgd_once, dbgd_load);
	debuginfod_client *c = dbgd.begin ? dbgd.begin() : NULL;
	if (!c)
		return -1;
	const char *news = bin->path;
	char *path = NULL;
	dbgd.set_user(c, &news);
	dbgd.set_progress(c, dbgd_progress);
	int fd = dbgd.find(c, id, (int)idlen, &path);
	dbgd.end(c);
	if (fd < 0) {
		rtl_debug("%s: no debug file from debuginfod: %s", bin->path, strerror(-fd));
		return -1;
	}
	close(fd);
	int r = try_open(bin, path);
	free(path);
	return r;
}

/* The file name in .gnu_debuglink, or NULL. */
static const char *debuglink(const rtl_binary *bin)
{
	GElf_Shdr sh;
	Elf_Scn *scn = rtl_binary_find_section(bin, ".gnu_debuglink", &sh);
	Elf_Data *d = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_size || !memchr(d->d_buf, 0, d->d_size))
		return NULL;
	const char *name = d->d_buf;
	return *name && !strchr(name, '/') ? name : NULL;
}

/* Calls FN with each place BIN's debug file may be, in the order they are
 * tried (build-id, then .gnu_debuglink), until FN returns 0: then 0, else
 * -1. */
static int each_candidate(rtl_binary *bin, int (*fn)(rtl_binary *bin, const char *path, void *ctx),
			  void *ctx)
{
	char path[PATH_MAX], root_buf[PATH_MAX];
	const char *root;
	size_t idlen;
	const unsigned char *id = rtl_elf_build_id(bin->elf, &idlen);
	if (id && idlen >= 2) {
		for (size_t r = 0; (root = debug_root(r, root_buf, sizeof(root_buf))); r++) {
			int at = snprintf(path, sizeof(path), "%s/.build-id/%02x/", root, id[0]);
			for (size_t i = 1; i < idlen && at > 0 && (size_t)at < sizeof(path) - 8; i++)
				at += snprintf(path + at, sizeof(path) - (size_t)at, "%02x", id[i]);
			snprintf(path + at, sizeof(path) - (size_t)at, ".debug");
			if (!fn(bin, path, ctx))
				return 0;
		}
	}
	const char *link = debuglink(bin);
	char *real = link ? realpath(bin->path, NULL) : NULL;
	if (!real)
		return -1;
	char *slash = strrchr(real, '/');
	*slash = 0;   /* the binary's folder */
	const char *dir = *real ? real : "/";
	int found = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, link) < sizeof(path) &&
	    strcmp(path, bin->path) && !fn(bin, path, ctx))
		found = 0;
	else if ((size_t)snprintf(path, sizeof(path), "%s/.debug/%s", dir, link) < sizeof(path) &&
		 !fn(bin, path, ctx))
		found = 0;
	for (size_t r = 0; found && (root = debug_root(r, root_buf, sizeof(root_buf))); r++)
		if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", root, real, link) < sizeof(path) &&
		    !fn(bin, path, ctx))
			found = 0;
	free(real);
	return found;
}

static int open_candidate(rtl_binary *bin, const char *path, void *ctx)
{
	(void)ctx;
	return access(path, R_OK) ? -1 : try_open(bin, path);
}

int rtl_elf_open_debug_file(rtl_binary *bin)
{
	if (bin->debug_elf)
		return 0;
	if (bin->debug_tried)
		return -1;
	bin->debug_tried = 1;
	if (!each_candidate(bin, open_candidate, NULL))
		return 0;
	size_t idlen;
	const unsigned char *id = rtl_elf_build_id(bin->elf, &idlen);
	return id && idlen ? try_debuginfod(bin, id, idlen) : -1;
}

struct first_readable {
	char *path;
	size_t len;
};

static int note_readable(rtl_binary *bin, const char *path, void *ctx)
{
	(void)bin;
	struct first_readable *f = ctx;
	if (access(path, R_OK))
		return -1;
	snprintf(f->path, f->len, "%s", path);
	return 0;
}

int rtl_elf_debug_candidate(rtl_binary *bin, char *path, size_t len)
{
	struct first_readable f = { path, len };
	*path = 0;
	if (!each_candidate(bin, note_readable, &f))
		return 0;
	return debuginfod_named() ? -1 : 0;
}

const char *rtl_elf_debug_path(const rtl_binary *bin)
{
	return bin->debug_path;
}

bool rtl_elf_debug_consulted(const rtl_binary *bin)
{
	return bin->debug_consulted;
}
