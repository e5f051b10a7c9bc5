-- A control file for `reticle run -f examples/run.lua` (from the source
-- folder, after the build): Lua assignments of what the options would say.
-- Options given with -f override them; a program after -- replaces
-- application and arguments.
application = "build/examples/primes"
arguments = { 20000 }
collect = { "fcount", "bbcount", "calltime" }
output = os.getenv("TMPDIR") and os.getenv("TMPDIR") .. "/primes.db" or "/tmp/primes.db"
stats = true
