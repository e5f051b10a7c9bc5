/* Internal logging: forwards to the callback set with rtl_set_log(). */
#ifndef RETICLE_UTIL_LOG_H
#define RETICLE_UTIL_LOG_H

enum { RTL_LOG_ERROR, RTL_LOG_WARN, RTL_LOG_INFO, RTL_LOG_DEBUG };

void rtl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rtl_warn(...) rtl_log(RTL_LOG_WARN, __VA_ARGS__)
#define rtl_info(...) rtl_log(RTL_LOG_INFO, __VA_ARGS__)
#define rtl_debug(...) rtl_log(RTL_LOG_DEBUG, __VA_ARGS__)

#endif
