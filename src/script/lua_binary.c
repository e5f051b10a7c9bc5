/* reticle/binary.h in Lua (script.h). */
#include "script.h"

void script_open_binary(lua_State *L)
{
	(void)L;
}
