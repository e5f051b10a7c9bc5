/* The session's collectors, for the engine's other files. */
#ifndef RETICLE_ENGINE_SESSION_PRIV_H
#define RETICLE_ENGINE_SESSION_PRIV_H

#include <stddef.h>
#include <reticle/collector.h>
#include <reticle/session.h>

size_t session_ncollectors(const struct rtl_session *s);
/* The caller's meta for the profile: key, value, ..., NULL. */
char *const *session_meta(const struct rtl_session *s);
const struct rtl_collector *session_collector(const struct rtl_session *s, size_t i);

#endif
