/* What /proc/PID/stat says of a task: its fields after the command. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "os/linux/os.h"

int os_task_field(pid_t tid, int field, char *out, size_t len)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* "pid (comm) state ...": comm may hold spaces and parentheses, so
	 * fields are counted from the last ')' (field 2's end) */
	char *c = strrchr(buf, ')');
	for (int f = 2; c && f < field; f++)
		c = strchr(c + 1, ' ');
	if (!c || field < 3)
		return -1;
	c++;
	size_t k = strcspn(c, " \n");
	if (!k || k >= len)
		return -1;
	memcpy(out, c, k);
	out[k] = 0;
	return 0;
}

bool os_task_ended(pid_t pid)
{
	char state[8];
	return os_task_field(pid, 3, state, sizeof(state)) || state[0] == 'Z' || state[0] == 'X';
}

int os_task_cpu(pid_t tid)
{
	char cpu[16];
	return os_task_field(tid, 39, cpu, sizeof(cpu)) ? -1 : atoi(cpu);
}

bool os_kernel_thread(pid_t pid)
{
	char flags[32];
	return !os_task_field(pid, 9, flags, sizeof(flags)) && (strtoul(flags, NULL, 10) & 0x00200000);   /* PF_KTHREAD */
}
