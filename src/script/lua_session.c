/* reticle/session.h, collector.h and probe.h in Lua (script.h). */
#include "script.h"

void script_open_session(lua_State *L)
{
	(void)L;
}
