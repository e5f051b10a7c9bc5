#include <errno.h>
#include <reticle/error.h>
#include "check.h"

int main(void)
{
	CHECK_STR(rtl_strerror(-RTL_ERR_NOT_ELF), "not an ELF file");
	CHECK_STR(rtl_strerror(-ENOENT), "No such file or directory");
	CHECK_STR(rtl_strerror(0), "success");
	CHECK_STR(rtl_strerror(-(RTL_ERR_LAST + 5)), "unknown error");
	return CHECK_DONE();
}
