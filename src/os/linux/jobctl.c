/* Job control of reticle itself. The target shares reticle's process
 * group, so a terminal's SIGTSTP/SIGTTIN/SIGTTOU (Ctrl-Z, a background
 * read) reach both. reticle must not stop first: the target would then be
 * frozen in a ptrace stop before its own handler ran (a pager could not
 * restore the terminal) and its other threads would run on. So while a
 * session runs these signals are blocked in reticle (pending, not lost),
 * and reticle stops with the same signal once the target has stopped. */
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include "os/linux/os.h"

static const int terminal_stops[] = { SIGTSTP, SIGTTIN, SIGTTOU };
static sigset_t held;   /* the ones os_jobctl_begin blocked */

void os_jobctl_begin(void)
{
	sigset_t old;
	sigemptyset(&held);
	sigprocmask(SIG_BLOCK, NULL, &old);
	for (size_t i = 0; i < sizeof(terminal_stops) / sizeof(terminal_stops[0]); i++) {
		struct sigaction sa;
		int sig = terminal_stops[i];
		/* an ignored or caught one does not stop reticle anyway */
		if (!sigaction(sig, NULL, &sa) && sa.sa_handler == SIG_DFL && !sigismember(&old, sig))
			sigaddset(&held, sig);
	}
	sigprocmask(SIG_BLOCK, &held, NULL);
}

void os_jobctl_end(void)
{
	static const struct timespec now = { 0, 0 };
	/* one the target did not stop for (it caught or ignored it) is dropped */
	while (sigtimedwait(&held, NULL, &now) > 0)
		;
	sigprocmask(SIG_UNBLOCK, &held, NULL);
	sigemptyset(&held);
}

void os_jobctl_child(void)
{
	sigprocmask(SIG_UNBLOCK, &held, NULL);
}

bool os_jobctl_shared(int sig)
{
	sigset_t pending;
	return sigismember(&held, sig) == 1 && !sigpending(&pending) &&
	       sigismember(&pending, sig) == 1;
}

void os_jobctl_stop_self(int sig)
{
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	/* the pending signal is taken here: reticle stops until a SIGCONT */
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	sigprocmask(SIG_BLOCK, &one, NULL);
}
