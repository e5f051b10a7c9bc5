-- reticle.sim_* (include/reticle/sim.h) against independent oracles: qemu-user
-- (exit status, the one-instruction-per-block exec trace, a program's output
-- file), riscv64 objdump (addresses, lengths, mnemonics), readelf (entry,
-- segments, function symbols), the ELF file's bytes, a native build of the
-- same program, sqlite3 on the profile, /proc and id(1) for system calls,
-- and `reticle sim` for the built-in tools' reports.
local ctx = ...
local r = reticle
local work = ctx.work .. "/sim"
local progs = ctx.source .. "/tests/sim/programs"
local cli = ctx.build .. "/src/reticle"

local function sh(cmd)
  local f = assert(io.popen(cmd))
  local out = f:read("a")
  local ok, _, code = f:close()
  return out, ok and 0 or code
end
local function must(cmd)
  local out, code = sh(cmd)
  assert(code == 0, cmd .. ": exit " .. tostring(code) .. "\n" .. out)
  return out
end
local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
-- f() must raise an error whose message contains every string of WANT.
local function fails(want, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "no error, expected " .. want[1])
  for _, w in ipairs(want) do
    assert(tostring(err):find(w, 1, true), "error '" .. tostring(err) .. "' lacks '" .. w .. "'")
  end
end
local function hex(n) return string.format("0x%x", n) end

must("mkdir -p " .. work)
local tiny, tiny_mips = work .. "/tiny.rv64", work .. "/tiny.mips32"
local calls, calls_native, args = work .. "/calls.rv64", work .. "/calls.native", work .. "/args.rv64"
must("riscv64-linux-gnu-gcc -O2 -static -nostdlib -o " .. tiny .. " " .. progs .. "/tiny.c")
must("mipsel-linux-gnu-gcc -O2 -static -nostdlib -mno-abicalls -fno-pic -o " .. tiny_mips .. " " .. progs .. "/tiny.c")
-- both count visit's calls (printed at the end); no sibling calls: they
-- would turn recursion into loops
local calls_flags = " -O2 -DCOUNT -fno-optimize-sibling-calls -o "
must("riscv64-linux-gnu-gcc -static" .. calls_flags .. calls .. " " .. progs .. "/calls.c")
must("cc" .. calls_flags .. calls_native .. " " .. progs .. "/calls.c")
local f = assert(io.open(work .. "/args.c", "w"))
f:write([[
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	FILE *f = fopen(argv[1], "w");
	fprintf(f, "argc %d argv0 %s X=%s\n", argc, argv[0], getenv("X") ? getenv("X") : "(unset)");
	return fclose(f) ? 1 : 5;
}
]])
f:close()
must("riscv64-linux-gnu-gcc -O2 -static -o " .. args .. " " .. work .. "/args.c")
-- a guest that forks: the child's status reaches the parent
local fork = work .. "/fork.rv64"
f = assert(io.open(work .. "/fork.c", "w"))
f:write([[
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	int st;
	pid_t pid = fork();
	if (pid == 0)
		_exit(3);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	return WEXITSTATUS(st) + 4;
}
]])
f:close()
must("riscv64-linux-gnu-gcc -O2 -static -o " .. fork .. " " .. work .. "/fork.c")

-- The oracles of tiny.rv64: qemu's trace and status, objdump's instructions.
local function qemu_trace(qemu, bin)
  local log = bin .. ".qemu.log"
  local _, status = sh(qemu .. " -singlestep -d exec,nochain -D " .. log .. " " .. bin)
  local trace = {}
  for line in io.lines(log) do
    local pc = line:match("^Trace %d+: 0x%x+ %[%x+/(%x+)/")
    if pc then trace[#trace + 1] = tonumber(pc, 16) end
  end
  return trace, status
end
local trace, qstatus = qemu_trace("qemu-riscv64", tiny)
assert(#trace > 1000 and qstatus ~= 0, "qemu trace of tiny: " .. #trace)
local executions, successors = {}, {}   -- per address: times executed, next addresses
for k, pc in ipairs(trace) do
  executions[pc] = (executions[pc] or 0) + 1
  successors[pc] = successors[pc] or {}
  if trace[k + 1] then table.insert(successors[pc], trace[k + 1]) end
end
-- address -> {mn = mnemonic, len = bytes}, in order in .list
local function objdump(options)
  local od = { list = {} }
  for line in must("riscv64-linux-gnu-objdump -d -M no-aliases " .. options):gmatch("[^\n]+") do
    local a, bytes, mn = line:match("^%s*(%x+):\t([%x ]+)\t(%S+)")
    if a then
      local e = { addr = tonumber(a, 16), len = #bytes:gsub(" ", "") // 2, mn = mn }
      od[e.addr] = e
      table.insert(od.list, e)
    end
  end
  return od
end
local od = objdump(tiny)
local cond = { beq = 1, bne = 1, blt = 1, bge = 1, bltu = 1, bgeu = 1, ["c.beqz"] = 1, ["c.bnez"] = 1 }
local jumps = { jal = 1, jalr = 1, ["c.j"] = 1, ["c.jal"] = 1, ["c.jr"] = 1, ["c.jalr"] = 1 }
local function is_branch(mn) return cond[mn] ~= nil or jumps[mn] ~= nil end
local function access(mn)   -- size and is_write of a load or store, or nil
  local base = mn:gsub("^c%.", ""):gsub("sp$", "")
  local sizes = { b = 1, bu = 1, h = 2, hu = 2, w = 4, wu = 4, d = 8 }
  local kind, width = base:match("^([ls])(%a+)$")
  if not kind then kind, width = base:match("^f([ls])([wd])$") end
  if kind and sizes[width] then return sizes[width], kind == "s" end
end
local entry = tonumber(must("readelf -h " .. tiny):match("Entry point address:%s+0x(%x+)"), 16)
local data_addr = tonumber(must("nm " .. tiny):match("(%x+) b data\n"), 16)

-- sim_isas, against the command line's help
local isas = r.sim_isas()
local help = must(cli .. " sim --help")
assert(#isas == 2, "sim_isas: " .. #isas)
for _, name in ipairs(isas) do assert(help:find(name, 1, true), "isa " .. name .. " not in reticle sim --help") end

-- Static structure and state before the run.
local s = r.sim_open(nil, { tiny })
assert(r.sim_isa_name(s) == "rv64")
assert(r.sim_pc(s) == entry, "sim_pc " .. hex(r.sim_pc(s)) .. " entry " .. hex(entry))
assert(r.sim_icount(s) == 0)
local start = r.sim_first_proc(s)
assert(r.sim_proc_name(start) == "_start" and r.sim_proc_addr(start) == entry)
assert(r.sim_next_proc(s, start) == nil, "tiny has one function")
assert(r.sim_find_proc(s, "_start") == start and r.sim_find_proc(s, "work") == nil)
assert(r.sim_proc_at(s, entry + 6) == start and r.sim_proc_at(s, 0x100) == nil)
-- the same entries as methods
assert(s:isa_name() == "rv64" and s:first_proc() == start and start:proc_addr() == entry)
assert(s:first_block(start):block_proc() == start and s:first_block(start):block_addr() == entry)
-- the blocks partition _start's instructions and end at branches (or its end)
local b, at, nblocks = r.sim_first_block(s, start), entry, 0
local last_od = od.list[#od.list]
while b do
  nblocks = nblocks + 1
  assert(r.sim_block_addr(b) == at, "block at " .. hex(r.sim_block_addr(b)) .. ", expected " .. hex(at))
  assert(r.sim_block_proc(b) == start)
  local n, a = 1, at
  while a < r.sim_last_insn(b) do a, n = a + od[a].len, n + 1 end
  assert(a == r.sim_last_insn(b) and n == r.sim_block_ninsns(b),
         "block " .. hex(at) .. ": " .. r.sim_block_ninsns(b) .. " instructions, objdump " .. n)
  local mn = od[a].mn
  assert(is_branch(mn) or mn == "ecall" or a == last_od.addr, "block ends at " .. mn)
  at = a + od[a].len
  b = r.sim_next_block(s, b)
end
assert(nblocks >= 3 and at == last_od.addr + last_od.len)
-- disassembly: objdump's mnemonic and length at every address
for _, e in ipairs(od.list) do
  local text, len = r.sim_disasm(s, e.addr)
  assert(text:match("^(%S+)") == e.mn and len == e.len,
         hex(e.addr) .. ": sim_disasm '" .. text .. "' " .. len .. ", objdump " .. e.mn .. " " .. e.len)
end
-- memory: the file's bytes where readelf maps the entry
local seg_off, seg_va = must("readelf -lW " .. tiny):match("LOAD%s+0x(%x+)%s+0x(%x+)%s+0x%x+%s+0x%x+%s+0x%x+%s+R E")
local file_at = tonumber(seg_off, 16) + entry - tonumber(seg_va, 16)
assert(r.sim_read_mem(s, entry, 64) == read_file(tiny):sub(file_at + 1, file_at + 64), "sim_read_mem")
assert(r.sim_read_mem(s, entry, 0) == "")
local names, known = r.sim_insn_names(s), {}
for _, n in ipairs(names) do known[n] = true end
for _, e in ipairs(od.list) do assert(known[e.mn], "sim_insn_names lacks " .. e.mn) end
assert(r.sim_reg(s, "X", 0) == 0 and r.sim_reg(s, "X", 2) > 0, "zero and sp")

-- Hooks: every instruction by name before it runs, the loop's branch after
-- it, the loop's block, _start's entry, the exit's ecall, memory, trailer.
local seen, insns_ok = {}, {}
for _, n in ipairs(names) do
  r.sim_add_call_by_name(s, n, r.SIM_BEFORE, function(sim, insn)
    local a = r.sim_insn_addr(insn)
    seen[#seen + 1] = a
    assert(r.sim_pc(sim) == a, "pc in a before hook")
    if not insns_ok[insn] then   -- one check per instruction object
      local e = od[a]
      assert(r.sim_insn_len(insn) == e.len and r.sim_insn_name(sim, insn) == e.mn, hex(a) .. " " .. e.mn)
      assert(r.sim_insn_is_branch(insn) == is_branch(e.mn), hex(a) .. " is_branch " .. e.mn)
      assert(r.sim_insn_is_cond_branch(insn) == (cond[e.mn] ~= nil), hex(a) .. " is_cond_branch " .. e.mn)
      insns_ok[insn] = true
    end
  end)
end
local loop   -- the block executed most often, ending in a conditional branch
b = r.sim_first_block(s, start)
while b do
  if cond[od[r.sim_last_insn(b)].mn] and (not loop or executions[r.sim_block_addr(b)]
                                           > executions[r.sim_block_addr(loop)]) then
    loop = b
  end
  b = r.sim_next_block(s, b)
end
assert(loop, "no loop found")
local entered, after_pcs, call_pcs = 0, {}, {}
r.sim_add_block_call(s, loop, r.SIM_BEFORE, function(sim, insn)
  assert(r.sim_insn_addr(insn) == r.sim_block_addr(loop))
  entered = entered + 1
end)
r.sim_add_block_call(s, loop, r.SIM_AFTER, function(sim) after_pcs[#after_pcs + 1] = r.sim_pc(sim) end)
r.sim_add_call(s, r.sim_last_insn(loop), r.SIM_AFTER, function(sim) call_pcs[#call_pcs + 1] = r.sim_pc(sim) end)
local starts = 0
r.sim_add_proc_call(s, start, r.SIM_BEFORE, function(sim, insn)
  assert(r.sim_insn_addr(insn) == entry)
  starts = starts + 1
end)
local ecall, exit_arg, exit_nr
for _, e in ipairs(od.list) do if e.mn == "ecall" then ecall = e.addr end end
r.sim_add_call(s, ecall, r.SIM_BEFORE, function(sim)
  exit_arg, exit_nr = r.sim_reg(sim, "X", 10), r.sim_reg(sim, "X", 17)
end)
local mem = { [false] = 0, [true] = 0 }
r.sim_add_mem_call(s, function(sim, pc, addr, size, is_write)
  local want_size, want_write = access(od[pc].mn)
  assert(size == want_size and is_write == want_write, hex(pc) .. " " .. od[pc].mn .. ": " .. size)
  assert(addr >= data_addr and addr + size <= data_addr + 64 * 8, "access outside data[]: " .. hex(addr))
  mem[is_write] = mem[is_write] + 1
end)
local trailers, counted = 0, {}
r.sim_add_trailer(s, function(sim)
  trailers = trailers + 1
  assert(r.sim_icount(sim) == #trace, "icount in the trailer")
  r.sim_for_each_executed(sim, function(sim2, insn, count)
    assert(sim2 == sim)
    local a = r.sim_insn_addr(insn)
    counted[a] = (counted[a] or 0) + count
  end)
end)
-- built-in tools and a profile
local tools_out = work .. "/tools.txt"
local tools_file = assert(io.open(tools_out, "w"))
r.sim_tool_builtin(s, "icount", tools_file)
r.sim_tool_builtin(s, "mix", tools_file)
local profile = work .. "/tiny.db"
os.remove(profile)
local result = r.sim_add_profile(s, profile, "tiny one", "api_sim")
assert(result() == 1, "profile result before the run")

local status = r.sim_run(s)
assert(status == qstatus and exit_arg == qstatus and exit_nr == 93,
       "status " .. status .. ", a0 " .. tostring(exit_arg) .. ", qemu " .. qstatus)
assert(r.sim_message(s) == "", "message after a normal exit: " .. r.sim_message(s))
assert(r.sim_icount(s) == #trace, "icount " .. r.sim_icount(s) .. ", qemu " .. #trace)
assert(#seen == #trace, "hooked " .. #seen .. " instructions, qemu " .. #trace)
for k = 1, #trace do assert(seen[k] == trace[k], "instruction " .. k .. ": " .. hex(seen[k])) end
local nloads, nstores = 0, 0
for _, pc in ipairs(trace) do
  local size, w = access(od[pc].mn)
  if size then
    if w then nstores = nstores + 1 else nloads = nloads + 1 end
  end
end
assert(mem[false] == nloads and mem[true] == nstores and nloads > 0 and nstores > 0,
       "memory hooks " .. mem[false] .. "/" .. mem[true] .. ", trace " .. nloads .. "/" .. nstores)
assert(entered == executions[r.sim_block_addr(loop)], "loop block entered " .. entered)
local branch_succ = successors[r.sim_last_insn(loop)]
assert(#after_pcs == #branch_succ and #call_pcs == #branch_succ)
for k, pc in ipairs(branch_succ) do assert(after_pcs[k] == pc and call_pcs[k] == pc, "pc after the branch") end
assert(starts == 1 and trailers == 1)
for pc, n in pairs(executions) do assert(counted[pc] == n, hex(pc) .. " counted " .. tostring(counted[pc])) end
for pc in pairs(counted) do assert(executions[pc], "counted " .. hex(pc) .. ", never executed") end
assert(result() == 0, "profile result " .. tostring(result()))
tools_file:close()
local cli_err = must(cli .. " sim -c icount,mix -- " .. tiny .. " 2>&1 >/dev/null; true")
assert(read_file(tools_out) == cli_err, "tools:\n" .. read_file(tools_out) .. "reticle sim -c:\n" .. cli_err)
assert(cli_err:find("icount: " .. #trace .. " instructions", 1, true))
local function sql(q) return (must("sqlite3 " .. profile .. " \"" .. q .. "\""):gsub("\n$", "")) end
assert(sql("select value from meta where key = 'isa'") == "rv64")
assert(sql("select value from meta where key = 'tool'") == "api_sim")
assert(sql("select value from meta where key = 'command'") == "tiny one")
assert(sql("select value from meta where key = 'exit_status'") == tostring(qstatus))
assert(sql("select sum(instrs) from functions") == tostring(#trace))
assert(sql("select sum(ninstrs * count) from blocks") == tostring(#trace))
fails({ "sim_run" }, r.sim_run, s)   -- a simulator runs once
r.sim_close(s)
r.sim_close(s)   -- harmless
fails({ "closed" }, r.sim_pc, s)
fails({ "closed" }, r.sim_proc_name, start)
fails({ "closed" }, r.sim_insn_len, next(insns_ok))

-- Procedures of a libc program against readelf's function symbols (one per
-- address), and a procedure's entries against a native build's count.
s = r.sim_open("rv64", { calls }, { "A=1" })
local want = {}
for line in must("readelf -sW " .. calls):gmatch("[^\n]+") do
  local value, size, name = line:match("^%s*%d+: (%x+)%s+(%d+)%s+FUNC%s+%S+%s+%S+%s+%S+%s+(%S+)")
  if value and tonumber(value, 16) ~= 0 and tonumber(size) > 0 then
    want[tonumber(value, 16)] = want[tonumber(value, 16)] or {}
    want[tonumber(value, 16)][name] = true
  end
end
local nprocs, p = 0, r.sim_first_proc(s)
while p do
  local names_at = want[r.sim_proc_addr(p)]
  assert(names_at and names_at[r.sim_proc_name(p)], "proc " .. r.sim_proc_name(p) .. " not in readelf -s")
  nprocs = nprocs + 1
  p = r.sim_next_proc(s, p)
end
local naddrs = 0
for _ in pairs(want) do naddrs = naddrs + 1 end
assert(nprocs == naddrs and nprocs > 100, "procs " .. nprocs .. ", readelf " .. naddrs)
local visit = r.sim_find_proc(s, "visit")
assert(visit and r.sim_proc_addr(visit) == tonumber(must("nm " .. calls):match("(%x+) T visit\n"), 16))
local visits = 0
r.sim_add_proc_call(s, visit, r.SIM_BEFORE, function() visits = visits + 1 end)
-- visit's instructions (calls, returns, both kinds of branches) after the run
local od_visit, checked = objdump("--disassemble=visit " .. calls), 0
r.sim_add_trailer(s, function(sim)
  r.sim_for_each_executed(sim, function(_, insn)
    local e = od_visit[r.sim_insn_addr(insn)]
    if e then
      assert(r.sim_insn_len(insn) == e.len and r.sim_insn_name(sim, insn) == e.mn, hex(e.addr) .. " " .. e.mn)
      assert(r.sim_insn_is_branch(insn) == is_branch(e.mn), hex(e.addr) .. " is_branch " .. e.mn)
      assert(r.sim_insn_is_cond_branch(insn) == (cond[e.mn] ~= nil), hex(e.addr) .. " is_cond_branch " .. e.mn)
      checked = checked + 1
    end
  end)
end)
fails({ "sim_add_proc_call" }, r.sim_add_proc_call, s, visit, r.SIM_AFTER, print)   -- not offered
assert(r.sim_run(s) == 0)
local native = must(calls_native)
assert(native:match("visit (%d+)") == tostring(visits), "visit entries " .. visits .. ", native " .. native)
assert(checked >= #od_visit.list, "visit's instructions checked: " .. checked)
-- objects of one simulator are refused by another
local s2 = r.sim_open(nil, { calls })
fails({ "another simulator" }, r.sim_first_block, s2, visit)
r.sim_close(s2)
r.sim_close(s)

-- Arguments, environment, argv[0] apart from the path: the guest's file
-- against qemu's (-0 sets argv[0]).
local out_q, out_s = work .. "/args.qemu", work .. "/args.sim"
local _, qs = sh("env -i X=y qemu-riscv64 -0 fake " .. args .. " " .. out_q)
s = r.sim_open_program(nil, args, { "fake", out_s }, { "X=y" })
assert(r.sim_run(s) == qs and qs == 5)
assert(read_file(out_s) == read_file(out_q) and read_file(out_q):find("argv0 fake X=y"), read_file(out_s))
r.sim_close(s)
_, qs = sh("env -i qemu-riscv64 " .. args .. " " .. out_q)
s = r.sim_open(nil, { args, out_s })
assert(r.sim_run(s) == qs and read_file(out_s) == read_file(out_q), read_file(out_s))
r.sim_close(s)

-- A guest's fork forks the script: the child must end with its guest (else
-- it would go on with this script, and the parent's wait would see its end).
_, qs = sh("qemu-riscv64 " .. fork)
s = r.sim_open(nil, { fork })
assert(qs == 7 and r.sim_run(s) == qs)
r.sim_close(s)

-- MIPS: an ISA named, qemu-mipsel's status and instruction count.
local mtrace, mstatus = qemu_trace("qemu-mipsel", tiny_mips)
s = r.sim_open("mips32", { tiny_mips })
assert(r.sim_isa_name(s) == "mips32")
local mips_entry = tonumber(must("readelf -h " .. tiny_mips):match("Entry point address:%s+0x(%x+)"), 16)
assert(r.sim_pc(s) == mips_entry)
assert(r.sim_run(s) == mstatus and r.sim_icount(s) == #mtrace,
       "mips32: icount " .. r.sim_icount(s) .. ", qemu " .. #mtrace)
r.sim_close(s)

-- The core's services: system calls answered by the host, traps, signals,
-- memory accesses reported to the hooks.
local pid = tonumber(read_file("/proc/self/stat"):match("^(%d+)"))
local uid = tonumber(must("id -u"))
s = r.sim_open(nil, { tiny })
assert(r.sim_syscall(s, entry, 172) == pid, "getpid")   -- asm-generic numbers
assert(r.sim_syscall(s, entry, 174) == uid, "getuid")
-- getcwd into the guest's stack, below its pointer; a short buffer: -ERANGE
local cwd, buf = must("pwd -P"):gsub("\n$", ""), r.sim_reg(s, "X", 2) - 4096
local len = r.sim_syscall(s, entry, 17, buf, 4096)
assert(len == #cwd + 1 and r.sim_read_mem(s, buf, len) == cwd .. "\0", "getcwd " .. len)
assert(r.sim_syscall(s, entry, 17, buf, 1) == -34, "getcwd: ERANGE")
local accesses = {}
r.sim_add_mem_call(s, function(...) accesses[#accesses + 1] = { ... } end)
r.sim_mem_access(s, 0x10100, 0x20008, 8, true)
r.sim_mem_access(s, 0x10104, 0x2000c, 2, 0)
assert(#accesses == 2)
local a1, a2 = accesses[1], accesses[2]
assert(a1[1] == s and a1[2] == 0x10100 and a1[3] == 0x20008 and a1[4] == 8 and a1[5] == true)
assert(a2[2] == 0x10104 and a2[3] == 0x2000c and a2[4] == 2 and a2[5] == false)
r.sim_add_mem_call(s, function() error("memory hook failed") end)
fails({ "memory hook failed" }, r.sim_mem_access, s, 0, 0, 1, false)
r.sim_close(s)
s = r.sim_open(nil, { tiny })
-- killed by SIGKILL at its first instruction: its first block still ends
r.sim_add_proc_call(s, r.sim_first_proc(s), r.SIM_BEFORE, function(sim, insn)
  r.sim_raise(sim, r.sim_insn_addr(insn), 9)
end)
assert(r.sim_run(s) == 128 + 9)
assert(r.sim_message(s):find("guest killed", 1, true) and r.sim_message(s):find(hex(entry), 1, true), r.sim_message(s))
assert(r.sim_icount(s) == r.sim_block_ninsns(r.sim_first_block(s, r.sim_first_proc(s))))
r.sim_close(s)
s = r.sim_open(nil, { tiny })
-- interrupted (as by SIGTERM) at its first instruction: its first block still ends
r.sim_add_proc_call(s, r.sim_first_proc(s), r.SIM_BEFORE, function(sim) r.sim_interrupt(sim, 15) end)
fails({ "sim_run", "interrupted by SIGTERM" }, r.sim_run, s)
assert(r.sim_icount(s) == r.sim_block_ninsns(r.sim_first_block(s, r.sim_first_proc(s))))
assert(r.sim_message(s) == "interrupted by SIGTERM after " .. r.sim_icount(s) .. " instructions", r.sim_message(s))
r.sim_close(s)
s = r.sim_open(nil, { tiny_mips })
assert(r.sim_syscall(s, mips_entry, 4020) == pid, "getpid (o32)")
r.sim_trap(s, 0x1234, "stopped here")
fails({ "sim_run", "stopped here at 0x1234" }, r.sim_run, s)
assert(r.sim_message(s) == "stopped here at 0x1234")
r.sim_close(s)

-- Errors: an error code names its entry (argument checks are luaL_check*'s:
-- under api.lua's wrapper they name it "fn"); a hook's error ends the run.
fails({ "sim_open", "/nonexistent" }, r.sim_open, nil, { "/nonexistent" })
fails({ "sim_open" }, r.sim_open, nil, {})
fails({ "sim_open" }, r.sim_open, "nosuchisa", { tiny })
fails({ "sim_open_program" }, r.sim_open_program, nil, work, { "x" })
fails({ "bad argument #2", "not a string" }, r.sim_open, nil, { tiny, 7 })
s = r.sim_open(nil, { tiny })
fails({ "sim_add_call_by_name" }, r.sim_add_call_by_name, s, "nosuchinsn", r.SIM_BEFORE, print)
fails({ "bad argument #3", "SIM_BEFORE or SIM_AFTER" }, r.sim_add_call, s, entry, 7, print)
fails({ "bad argument #2", "function expected" }, r.sim_add_trailer, s, "not a function")
fails({ "sim_reg" }, r.sim_reg, s, "Q", 0)
fails({ "sim_reg" }, r.sim_reg, s, "X", 32)
fails({ "sim_read_mem" }, r.sim_read_mem, s, 0, 4)
fails({ "sim_read_mem" }, r.sim_read_mem, s, 1 << 40, 4)
fails({ "sim_disasm" }, r.sim_disasm, s, 0)   -- never mapped: -EFAULT, not a crash
fails({ "sim_disasm" }, r.sim_disasm, s, 0)
fails({ "sim_tool_builtin" }, r.sim_tool_builtin, s, "nosuchtool")
fails({ "sim_tool_builtin" }, r.sim_tool_builtin, s, "cache:3:3:3")
fails({ "sim_add_profile" }, r.sim_add_profile, s, work .. "/no/such/dir/p.db")
fails({ "bad argument #1", "reticle.sim_proc expected" }, r.sim_proc_name, s)
fails({ "bad argument #1", "reticle.sim_insn expected" }, r.sim_insn_addr, r.sim_first_proc(s))
local closed = assert(io.open(work .. "/closed.txt", "w"))
r.sim_tool_builtin(s, "icount", closed)
closed:close()
fails({ "sim_run", "closed" }, r.sim_run, s)
r.sim_close(s)
s = r.sim_open(nil, { tiny })
local hooks = 0
r.sim_add_call(s, entry, r.SIM_BEFORE, function(sim)
  hooks = hooks + 1
  fails({ "sim_close", "running" }, r.sim_close, sim)
  error("hook failed")
end)
r.sim_add_call(s, entry, r.SIM_AFTER, function() hooks = hooks + 1 end)
fails({ "hook failed" }, r.sim_run, s)
assert(hooks == 1 and r.sim_message(s):find("a Lua hook raised an error", 1, true), r.sim_message(s))
r.sim_close(s)

-- closed without a run: its profile's temporary file and its tools' state go
s = r.sim_open(nil, { tiny })
r.sim_add_profile(s, work .. "/never.db")
r.sim_tool_builtin(s, "mix")
r.sim_tool_builtin(s, "cache")
r.sim_close(s)
local left = sh("ls " .. work .. " | grep '^never' || true")
assert(left == "", "left behind: " .. left)
print("ok")
