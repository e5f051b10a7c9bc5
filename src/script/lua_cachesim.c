/* reticle/cachesim.h in Lua (script.h). */
#include "script.h"

void script_open_cachesim(lua_State *L)
{
	(void)L;
}
