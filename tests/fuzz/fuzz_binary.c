/* libFuzzer harness for the ELF reader (not built by CMake; see README.md).
 * Each input is written to a memfd and opened through /proc/self/fd. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "binary_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = memfd_create("rtl-fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		fuzz_exercise_binary(path, size);
	}
	close(fd);
	return 0;
}
