/* reticle/sim.h in Lua (script.h). */
#include "script.h"

void script_open_sim(lua_State *L)
{
	(void)L;
}
