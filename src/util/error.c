#include <string.h>
#include <reticle/error.h>

static const char *const messages[] = {
	[RTL_ERR_NOT_ELF - RTL_ERR_BASE] = "not an ELF file",
	[RTL_ERR_WRONG_ARCH - RTL_ERR_BASE] = "ELF file for another architecture",
	[RTL_ERR_TRUNCATED - RTL_ERR_BASE] = "truncated ELF file",
	[RTL_ERR_BAD_ELF - RTL_ERR_BASE] = "malformed ELF file",
	[RTL_ERR_UNKNOWN_COLLECTOR - RTL_ERR_BASE] = "unknown collector",
	[RTL_ERR_BAD_OPTION - RTL_ERR_BASE] = "bad option",
	[RTL_ERR_TARGET_LAUNCH - RTL_ERR_BASE] = "cannot launch the target",
	[RTL_ERR_PTRACE - RTL_ERR_BASE] = "ptrace request failed",
	[RTL_ERR_NO_SPACE - RTL_ERR_BASE] = "no free address range near the module",
	[RTL_ERR_DECODE - RTL_ERR_BASE] = "undecodable instruction",
	[RTL_ERR_UNSUPPORTED - RTL_ERR_BASE] = "unsupported construct",
	[RTL_ERR_STORE - RTL_ERR_BASE] = "profile store error",
	[RTL_ERR_BAD_INPUT - RTL_ERR_BASE] = "malformed input",
	[RTL_ERR_NOT_PROFILE - RTL_ERR_BASE] = "not a reticle profile",
	[RTL_ERR_PROFILE_VERSION - RTL_ERR_BASE] = "profile written by a newer reticle (unsupported schema version)",
	[RTL_ERR_PROFILE_CORRUPT - RTL_ERR_BASE] = "damaged profile (truncated or corrupt)",
	[RTL_ERR_NO_SAMPLING - RTL_ERR_BASE] = "cannot sample it (the message above says why)",
	[RTL_ERR_TARGET_STOPPED - RTL_ERR_BASE] = "the process is stopped (continue it first: kill -CONT)",
};

const char *rtl_strerror(int err)
{
	if (err >= 0)
		return "success";
	err = -err;
	if (err > RTL_ERR_BASE && err < RTL_ERR_LAST && messages[err - RTL_ERR_BASE])
		return messages[err - RTL_ERR_BASE];
	if (err < RTL_ERR_BASE)
		return strerror(err);
	return "unknown error";
}
