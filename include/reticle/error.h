/* reticle error codes: every library function returns 0 or a negative code.
 * Negative values above -RTL_ERR_BASE are -errno; below are reticle's own. */
#ifndef RETICLE_ERROR_H
#define RETICLE_ERROR_H

#include <reticle/api.h>

enum rtl_error {
	RTL_ERR_BASE = 4096,
	RTL_ERR_NOT_ELF,        /* file is not an ELF object */
	RTL_ERR_WRONG_ARCH,     /* ELF for another machine or class */
	RTL_ERR_TRUNCATED,      /* ELF headers point past the end of the file */
	RTL_ERR_BAD_ELF,        /* ELF structures are inconsistent */
	RTL_ERR_UNKNOWN_COLLECTOR,
	RTL_ERR_BAD_OPTION,
	RTL_ERR_TARGET_LAUNCH,  /* the target could not be started */
	RTL_ERR_PTRACE,         /* the kernel refused a ptrace request */
	RTL_ERR_NO_SPACE,       /* no address range free near a module */
	RTL_ERR_DECODE,         /* bytes that do not decode as x86-64 */
	RTL_ERR_UNSUPPORTED,    /* a construct reticle does not handle */
	RTL_ERR_STORE,          /* the profile store (SQLite) failed */
	RTL_ERR_BAD_INPUT,      /* malformed input file (trace, BBV, description) */
	RTL_ERR_NOT_PROFILE,    /* file is not a reticle profile */
	RTL_ERR_PROFILE_VERSION, /* profile schema newer than this reticle reads */
	RTL_ERR_PROFILE_CORRUPT, /* a profile with unreadable contents */
	RTL_ERR_NO_SAMPLING,    /* perf_event sampling is not available (the log says why) */
	RTL_ERR_TARGET_STOPPED, /* the process to attach to is stopped (job control) */
	RTL_ERR_LAST
};

/* A message for any code returned by libreticle (negative errno included). */
RTL_API const char *rtl_strerror(int err);

/* libreticle never prints: it hands diagnostics to this callback (default:
 * none). level: 0 error, 1 warning, 2 info, 3 debug. */
typedef void (*rtl_log_fn)(int level, const char *msg, void *user);
RTL_API void rtl_set_log(rtl_log_fn fn, void *user);
/* Messages above LEVEL are neither formatted nor passed on (default 3, all):
 * the engine has a debug line for every stop of the target. */
RTL_API void rtl_set_log_level(int level);

#endif
