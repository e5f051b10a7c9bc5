/* Job control in the process-control layer (src/os/linux): a launched
 * target's SIGSTOP gives a group-stop that os_listen keeps until SIGCONT;
 * a group-stop passed over by an inner wait is reported again after
 * os_resume + os_interrupt; os_launch reports a failed exec's errno. The
 * oracle is the kernel's view in /proc/PID/stat and its wait reports. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "os/linux/os.h"

static char state_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p ? p[2] : '?';
}

/* Waits for PID, skipping nothing: the next report must be of KIND. */
static void expect(pid_t pid, enum os_stop_kind kind, int sig, int line)
{
	struct os_stop st;
	int err = os_wait_tid(pid, &st);
	if (err || st.kind != kind || (sig && st.sig != sig)) {
		fprintf(stderr, "line %d: wanted kind %d sig %d, got err %d kind %d sig %d\n", line,
			kind, sig, err, st.kind, st.sig);
		check_failures++;
	}
}

int main(void)
{
	char *argv[] = { "/bin/sleep", "30", NULL };
	pid_t pid = 0;
	CHECK_EQ(os_launch(argv, &pid, 0), 0);
	CHECK(pid > 0);
	if (pid <= 0)
		return CHECK_DONE();
	CHECK_EQ(state_of(pid), 't');

	/* SIGSTOP: delivered, it becomes a group-stop */
	kill(pid, SIGSTOP);
	CHECK_EQ(os_resume(pid, 0), 0);
	expect(pid, OS_SIGNAL, SIGSTOP, __LINE__);
	CHECK_EQ(os_resume(pid, SIGSTOP), 0);
	expect(pid, OS_GROUP_STOP, SIGSTOP, __LINE__);
	/* os_wait_tid is an inner wait: it notes the group-stop, once */
	CHECK(os_take_missed_stop(pid));
	CHECK(!os_take_missed_stop(pid));

	/* passed over (resumed), then interrupted: the stop is reported again */
	CHECK_EQ(os_resume(pid, 0), 0);
	CHECK_EQ(os_interrupt(pid), 0);
	expect(pid, OS_GROUP_STOP, SIGSTOP, __LINE__);

	/* kept: no report and still stopped 200 ms later */
	CHECK_EQ(os_listen(pid), 0);
	CHECK(!os_take_missed_stop(pid));
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	int status;
	CHECK_EQ(waitpid(pid, &status, __WALL | WNOHANG), 0);
	CHECK_EQ(state_of(pid), 't');
	CHECK(!os_sigcont_pending(pid));

	/* SIGCONT: the end of the stop is a SIGTRAP event stop, then the
	 * SIGCONT itself is delivered */
	kill(pid, SIGCONT);
	expect(pid, OS_OTHER, SIGTRAP, __LINE__);
	CHECK(os_sigcont_pending(pid));
	CHECK_EQ(os_resume(pid, 0), 0);
	expect(pid, OS_SIGNAL, SIGCONT, __LINE__);
	CHECK_EQ(os_resume(pid, SIGCONT), 0);
	nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	CHECK_EQ(state_of(pid), 'S');   /* running again: sleeping in nanosleep */

	/* killed: a last stop at its exit (reticle reads its memory there), then gone */
	kill(pid, SIGKILL);
	expect(pid, OS_EVENT_EXIT, 0, __LINE__);
	CHECK_EQ(os_resume(pid, 0), 0);
	expect(pid, OS_SIGNALED, SIGKILL, __LINE__);

	/* a failed exec: its errno, and no child left behind */
	char *bad[] = { "/nonexistent/program", NULL };
	CHECK_EQ(os_launch(bad, &pid, 0), -ENOENT);
	CHECK_EQ(waitpid(-1, &status, __WALL | WNOHANG), -1);
	return CHECK_DONE();
}
