#include <stdarg.h>
#include <stdio.h>
#include <reticle/error.h>
#include "util/log.h"

static rtl_log_fn log_fn;
static void *log_user;
static int log_level = RTL_LOG_DEBUG;

void rtl_set_log_level(int level)
{
	log_level = level;
}

void rtl_set_log(rtl_log_fn fn, void *user)
{
	log_fn = fn;
	log_user = user;
}

void rtl_log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!log_fn || level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(level, buf, log_user);
}
