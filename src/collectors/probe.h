/* The probe collector: a probe program's snippets and aggregations
 * (reticle probe; the language: probe/lang.h, docs/probe.md). One program
 * at a time. */
#ifndef RETICLE_COLLECTORS_PROBE_H
#define RETICLE_COLLECTORS_PROBE_H

#include <stddef.h>
#include <stdio.h>
#include <reticle/collector.h>

/* Parses TEXT as the program to run. Returns 0, or -EINVAL with "line L,
 * column C: ..." in ERR (LEN bytes). */
int probe_collector_load(const char *text, char *err, size_t len);
/* Checks that each point of the loaded program names a function of
 * MODULES (N paths: what a process has at its start; WHAT names them in
 * the message): a point restricted to a module none of them is may name
 * one loaded later. Returns 0, or -ENOENT with "line L: ..." in ERR. */
int probe_collector_check(char *const *modules, size_t n, const char *what, char *err, size_t len);
/* The collector of the loaded program (NULL before one is loaded). */
const struct rtl_collector *probe_collector(void);
/* Prints the aggregations, one per line (once the session has ended). */
void probe_collector_print(FILE *out);
/* printf()'s lines go to OUT (default stdout) as the program runs. */
void probe_collector_set_output(FILE *out);
/* Prints them as they stand while session S runs (counts so far; times
 * of the frames closed so far). */
#include <reticle/session.h>
void probe_collector_print_live(FILE *out, rtl_session *s);
/* While session S runs (from its on_tick callback; it was made with
 * dynamic_probes): clauses TEXT added to the program (refused when they
 * name no function of MODULES, as probe_collector_check says, WHAT naming
 * them), or clauses IDS (1:
 * the first) taken out at once, and the functions they name that ran made
 * again.
 * Returns 0 or -err, with what was done or why not in MSG. */
int probe_collector_add(rtl_session *s, const char *text, char *const *modules, size_t nmodules, const char *what,
			char *msg, size_t len);
int probe_collector_remove(rtl_session *s, const size_t *ids, size_t n, char *msg, size_t len);
/* The program's clauses: "ID[ (removed)]\tTEXT" lines. */
void probe_collector_list(FILE *out);
void probe_collector_unload(void);

#endif
