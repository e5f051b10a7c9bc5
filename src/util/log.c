#include <stdarg.h>
#include <stdio.h>
#include <reticle/error.h>
#include "util/log.h"

static rtl_log_fn log_fn;
static void *log_user;

void rtl_set_log(rtl_log_fn fn, void *user)
{
	log_fn = fn;
	log_user = user;
}

void rtl_log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(level, buf, log_user);
}
