-- binary.h from Lua (src/script/lua_binary.c): every entry called through
-- the module table, its results checked against binutils (readelf, nm,
-- objdump, addr2line, c++filt), the files' own bytes, line numbers read
-- off the test's source, and `reticle functions` for what only reticle
-- knows (instrumentability). Programs: a small C file built -g -O2 as a
-- PIE (an inlined function, a computed goto), as a non-PIE without DWARF
-- or build-id, statically, stripped; a shared object with a text
-- relocation; the system's libc.
local ctx = ...
local R = reticle
local work = ctx.work .. "/binary"
assert(os.execute("mkdir -p " .. work))

-- CMD's output; a failure is an error unless ANY_STATUS
local function sh(cmd, any_status)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  assert(ok or any_status, "failed: " .. cmd .. "\n" .. out)
  return out
end

local function lines(text)
  return text:gmatch("[^\n]+")
end

local function hex(s)
  return tonumber(s, 16)
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function file_bytes(path, offset, len)
  local f = assert(io.open(path, "rb"))
  f:seek("set", offset)
  local s = f:read(len)
  f:close()
  return s
end

-- FN(...) must raise an error whose message holds PLAIN (a plain string).
local function raises(plain, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "no error; expected one with '" .. plain .. "'")
  assert(tostring(err):find(plain, 1, true), "error '" .. tostring(err) .. "' lacks '" .. plain .. "'")
end

local function eq(got, want, what)
  if got ~= want then
    error(string.format("%s: got %s, want %s", what, tostring(got), tostring(want)), 2)
  end
end

-- The programs -----------------------------------------------------------

local source = [[
#include <stdio.h>

static inline __attribute__((always_inline)) int square(int x)
{
	return x * x + 3;
}

__attribute__((noinline)) int sum_squares(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += square(i ^ n);
	return s;
}

__attribute__((noinline)) int dispatch(int op, int v)
{
	static void *const table[] = { &&add, &&sub, &&done };
	goto *table[op];
add:
	v += 7;
	goto *table[2];
sub:
	v -= 5;
done:
	return v;
}

const char message[] = "reticle-binary-test";
int counter = 5;
char zeros[8192];

int main(int argc, char **argv)
{
	printf("%d %d %s %d %d\n", sum_squares(argc + 3), dispatch(argc & 1, argc), message, counter, zeros[argc]);
	return argv[0] == 0;
}
]]
local src = work .. "/t.c"
write(src, source)
-- the line each text starts, counted in the source above
local function line_of(text)
  local n = 0
  for l in (source .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    if l:find(text, 1, true) == 1 then return n end
  end
  error("no line starts with " .. text)
end

local pie, exe, static, stripped = work .. "/t", work .. "/tn", work .. "/ts", work .. "/tstrip"
local textrel = work .. "/tr.so"
sh("cc -g -O2 -fPIE -pie -o " .. pie .. " " .. src)
sh("cc -O1 -fno-pie -no-pie -Wl,--build-id=none -o " .. exe .. " " .. src)
sh("cc -O1 -static -o " .. static .. " " .. src)
sh("strip -o " .. stripped .. " " .. pie)
-- an absolute address in .text: the loader must write into the text
write(work .. "/tr.s", ".text\n.globl f\n.type f,@function\nf: ret\n.size f, 1\nptr: .quad f\n")
sh("cc -shared -nostdlib -Wl,-z,notext -o " .. textrel .. " " .. work .. "/tr.s")
local libc = sh("cc -print-file-name=libc.so.6"):gsub("%s+$", "")
assert(libc:sub(1, 1) == "/", "no libc.so.6: " .. libc)

-- What binutils say -------------------------------------------------------

local function readelf_header(path)
  local out = sh("readelf -hlndW " .. path)
  return {
    type = out:match("Type:%s+(%u+)"),
    pie = out:find("Position-Independent Executable", 1, true) ~= nil,
    entry = hex(out:match("Entry point address:%s+0x(%x+)")),
    interp = out:match("%[Requesting program interpreter: (.-)%]"),
    static = not out:find("%sINTERP%s") and not out:find("%sDYNAMIC%s"),
    textrel = out:find("(TEXTREL)", 1, true) ~= nil,
    build_id = out:match("Build ID: (%x+)"),
  }
end

-- LOAD program headers as rtl_segment tables
local function readelf_loads(path)
  local loads = {}
  for l in lines(sh("readelf -lW " .. path)) do
    local off, va, fsz, msz, flg = l:match("^%s*LOAD%s+0x(%x+)%s+0x(%x+)%s+0x%x+%s+0x(%x+)%s+0x(%x+)%s+(.-)%s+0x%x+$")
    if off then
      local flags = (flg:find("R") and 4 or 0) | (flg:find("W") and 2 or 0) | (flg:find("E") and 1 or 0)
      loads[#loads + 1] = { vaddr = hex(va), memsz = hex(msz), offset = hex(off), filesz = hex(fsz), flags = flags }
    end
  end
  return loads
end

local function readelf_relro(path)
  local va, msz = sh("readelf -lW " .. path):match("GNU_RELRO%s+0x%x+%s+0x(%x+)%s+0x%x+%s+0x%x+%s+0x(%x+)")
  return hex(va), hex(msz)
end

-- nm -S: name -> { addr, size, kind } (sized symbols)
local function nm(path, opts)
  local syms = {}
  for l in lines(sh("nm -S " .. (opts or "") .. " " .. path)) do
    local a, s, k, name = l:match("^(%x+) (%x+) (%a) (%S+)$")
    if a then syms[name:gsub("@.*", "")] = { addr = hex(a), size = hex(s), kind = k } end   -- nm -D: name@@VERSION
  end
  return syms
end

local stt = { NOTYPE = 0, OBJECT = 1, FUNC = 2, SECTION = 3, FILE = 4, COMMON = 5, TLS = 6, GNU_IFUNC = 10 }
local stb = { LOCAL = 0, GLOBAL = 1, WEAK = 2, UNIQUE = 10 }
-- One symbol table of readelf -sW (".symtab" or ".dynsym"): the defined
-- symbols that are neither FILE nor SECTION, by index; and the undefined
-- names.
local function readelf_symbols(path, which)
  local defined, undefined, inside = {}, {}, false
  for l in lines(sh("readelf -sW " .. path)) do
    local tab = l:match("^Symbol table '(.-)'")
    if tab then inside = tab == which end
    local i, v, size, ty, bind, ndx, name = l:match("^%s*(%d+): (%x+)%s+(%S+)%s+(%S+)%s+(%S+)%s+%S+%s+(%S+)%s*(%S*)")
    if inside and i then
      name = name:gsub("@.*", "")   -- .dynsym names as readelf shows them: with their version
      if ndx == "UND" then
        if name ~= "" then undefined[#undefined + 1] = name end
      elseif ty ~= "FILE" and ty ~= "SECTION" then
        defined[tonumber(i)] = { name = name, addr = hex(v), size = tonumber(size), type = stt[ty], bind = stb[bind] }
      end
    end
  end
  return defined, undefined
end

-- PLT stub address -> GOT slot, from the stubs objdump names X@plt
local function objdump_plt_slots(path)
  local slots, stub = {}, nil
  for l in lines(sh("objdump -d -j .plt -j .plt.got -j .plt.sec " .. path)) do
    local a, label = l:match("^(%x+) <(.-)>:$")
    if a then
      stub = label:match("@plt$") and hex(a) or nil
    elseif stub then
      local slot = l:match("jmp%s+%*0x%x+%(%%rip%)%s+# (%x+)")
      if slot then
        slots[stub] = hex(slot)
        stub = nil
      end
    end
  end
  return slots
end

-- `reticle functions --format json`: the records reticle's CLI prints
local source_bits = { symtab = R.SRC_SYMTAB, dynsym = R.SRC_DYNSYM, plt = R.SRC_PLT, eh_frame = R.SRC_EH_FRAME,
                      entry = R.SRC_ENTRY, gap = R.SRC_GAP, debugfile = R.SRC_DEBUG,
                      gopclntab = R.SRC_GOPCLNTAB }
local function cli_functions(path)
  local list = {}
  local out = sh("timeout -s KILL 60 " .. ctx.build .. "/src/reticle functions --format json " .. path)
  for l in lines(out) do
    local a, s, srcs, inst, reason, name =
      l:match('^%s*{"addr": (%d+), "size": (%d+), "sources": %[(.-)%], "instrumentable": (%a+), "reason": (.-), "name": "(.-)"')
    if a then
      local bits = 0
      for word in srcs:gmatch('"(.-)"') do bits = bits | assert(source_bits[word], word) end
      list[#list + 1] = { addr = tonumber(a), size = tonumber(s), sources = bits, instrumentable = inst == "true",
                          reason = reason:match('^"(.*)"$'), name = name }
    end
  end
  return list
end

-- Opening, kinds, headers ---------------------------------------------------

raises("binary_open: /no/such/file: ", R.binary_open, "/no/such/file")
raises("binary_open_image: /no/such/file: ", R.binary_open_image, "/no/such/file")
raises("binary_open: " .. src, R.binary_open, src)   -- not ELF
write(work .. "/short", file_bytes(pie, 0, 100))   -- ELF header, headers past its end
raises("binary_open: " .. work .. "/short", R.binary_open, work .. "/short")
raises("bad argument #1", R.binary_open)

local b = R.binary_open(pie)
local e = R.binary_open(exe)
local s = R.binary_open(static)
local tr = R.binary_open(textrel)
local lc = R.binary_open(libc)
eq(R.binary_path(b), pie, "path")
eq(R.binary_path(lc), libc, "path of libc")

for _, c in ipairs({ { b, pie }, { e, exe }, { s, static }, { tr, textrel }, { lc, libc } }) do
  local bin, path = c[1], c[2]
  local h = readelf_header(path)
  local kind = h.type == "EXEC" and R.BIN_EXEC or h.pie and R.BIN_PIE or R.BIN_SHARED
  eq(R.binary_kind(bin), kind, path .. ": kind")
  eq(R.binary_entry(bin), h.entry, path .. ": entry")
  eq(R.binary_interp(bin), h.interp, path .. ": interp")
  eq(R.binary_is_static(bin), h.static, path .. ": is_static")
  eq(R.binary_has_textrel(bin), h.textrel, path .. ": has_textrel")
  if h.build_id then
    eq(R.binary_identity(bin), "b-" .. h.build_id, path .. ": identity")
  end
  local loads = readelf_loads(path)
  eq(R.binary_segment_count(bin), #loads, path .. ": segment count")
  for i, want in ipairs(loads) do
    local got = R.binary_segment(bin, i - 1)
    for k, v in pairs(want) do eq(got[k], v, path .. ": segment " .. (i - 1) .. " " .. k) end
  end
  eq(R.binary_segment(bin, #loads), nil, "segment past the last")
end
-- the kinds this covers, lest readelf's words change under the test
eq(R.binary_kind(b), R.BIN_PIE, "t is a PIE")
eq(R.binary_kind(e), R.BIN_EXEC, "tn is an executable")
eq(R.binary_kind(lc), R.BIN_SHARED, "libc is a shared object")
assert(R.binary_is_static(s) and not R.binary_is_static(b), "is_static")
assert(R.binary_has_textrel(tr) and not R.binary_has_textrel(b), "has_textrel")
eq(R.binary_interp(s), nil, "a static program's interpreter")

-- without a build-id: a hash of the file's identity and path
local id = R.binary_identity(e)
assert(id:match("^f%-%x+$"), "identity without build-id: " .. id)
sh("cp " .. exe .. " " .. exe .. "2")
local e2 = R.binary_open(exe .. "2")
local e_again = R.binary_open(exe)
eq(R.binary_identity(e_again), id, "identity of the same file")
assert(R.binary_identity(e2) ~= id, "a copy elsewhere has its own identity")
R.binary_close(e2)
R.binary_close(e_again)

-- Functions -----------------------------------------------------------------

local function all_functions(bin)
  local list = {}
  for i = 0, R.binary_function_count(bin) - 1 do list[#list + 1] = R.binary_function(bin, i) end
  eq(R.binary_function(bin, #list), nil, "function past the last")
  return list
end

local syms = nm(pie)
local funcs = all_functions(b)
for i = 2, #funcs do assert(funcs[i - 1].addr < funcs[i].addr, "functions sorted, one per address") end
-- every sized function symbol nm lists is a record of its own
for name, sym in pairs(syms) do
  if sym.kind:lower() == "t" and sym.size > 0 then
    local f = R.binary_find_function(b, sym.addr + sym.size - 1)
    assert(f, "no function holds the end of " .. name)
    eq(f.name, name, "name at " .. sym.addr)
    eq(f.addr, sym.addr, name .. ": addr")
    eq(f.size, sym.size, name .. ": size")
    assert(f.sources & R.SRC_SYMTAB ~= 0, name .. ": from the symtab")
  end
end
raises("bad argument #2", R.binary_function, b, -1)
raises("bad argument #2", R.binary_segment, b, -1)
raises("bad argument #2", R.binary_code_pointer, b, "first")
eq(R.binary_find_function(b, 0), nil, "no function at the ELF header")
eq(R.binary_find_function(b, -1), nil, "no function at the top of memory")
raises("bad argument #2", R.binary_find_function, b, "main")

-- records and instrumentability as `reticle functions` prints them
for _, c in ipairs({ { b, pie }, { lc, libc } }) do
  local bin, path = c[1], c[2]
  R.binary_check_functions(bin)
  local got, want = all_functions(bin), cli_functions(path)
  eq(#got, #want, path .. ": function count (reticle functions)")
  for i, w in ipairs(want) do
    for k, v in pairs(w) do eq(got[i][k], v, path .. ": function " .. (i - 1) .. " " .. k) end
  end
end
eq(R.binary_find_function(b, syms.main.addr).instrumentable, true, "main is instrumentable")

-- PLT stubs and their GOT slots, as objdump disassembles the stubs
for _, c in ipairs({ { b, pie }, { lc, libc } }) do
  local bin, path = c[1], c[2]
  local slots, stubs = objdump_plt_slots(path), 0
  for _, f in ipairs(all_functions(bin)) do
    if f.sources & R.SRC_PLT ~= 0 then
      eq(R.binary_plt_slot(bin, f), slots[f.addr] or 0, path .. ": plt slot of " .. f.name)
      if slots[f.addr] then stubs = stubs + 1 end
      if f.name ~= "PLT0" then eq(f.reason, "PLT stub", f.name .. ": reason") end
    end
  end
  local n = 0
  for _ in pairs(slots) do n = n + 1 end
  eq(stubs, n, path .. ": PLT stubs objdump names")
end
local printf_plt
for _, f in ipairs(funcs) do if f.name == "printf@plt" then printf_plt = f end end
assert(printf_plt and printf_plt.sources & R.SRC_PLT ~= 0, "printf@plt")
eq(R.binary_plt_slot(b, R.binary_find_function(b, syms.main.addr)), 0, "main is no PLT stub")
raises("not a function of this binary", R.binary_plt_slot, b, { addr = syms.main.addr + 1 })
raises("bad argument #2", R.binary_plt_slot, b, printf_plt.addr)

-- imports and exports: readelf's undefined and defined dynamic symbols
eq(R.binary_imports(b, "printf"), true, "t imports printf")
eq(R.binary_exports(b, "printf"), false, "t does not export printf")
eq(R.binary_exports(lc, "printf"), true, "libc exports printf")
eq(R.binary_imports(lc, "printf"), false, "libc does not import printf")
local dyn, undefined = readelf_symbols(libc, ".dynsym")
assert(#undefined > 0, "libc imports nothing?")
for _, name in ipairs(undefined) do
  eq(R.binary_imports(lc, name), true, "libc imports " .. name)
end
local exports = 0
for _, sym in pairs(dyn) do
  exports = exports + 1
  if exports % 7 == 0 then eq(R.binary_exports(lc, sym.name), true, "libc exports " .. sym.name) end
end
eq(R.binary_exports(lc, "reticle_no_such_symbol"), false, "exports of a name nowhere")
eq(R.binary_imports(lc, "reticle_no_such_symbol"), false, "imports of a name nowhere")

-- Go or not: readelf's section names (Go's function table, build information);
-- the Go test program of tests/run, and Debian's gofmt, when there
for _, path in ipairs({ pie, exe, static, libc, ctx.build .. "/tests/run/work/go_static", "/usr/bin/gofmt" }) do
  if io.open(path) then
    local secs = sh("readelf -SW " .. path)
    local go = secs:find("%.gopclntab") ~= nil or secs:find("%.go%.buildinfo") ~= nil
    local x = R.binary_open_image(path)
    eq(R.binary_is_go(x), go, path .. " is Go")
    R.binary_close(x)
  end
end

-- Bytes -----------------------------------------------------------------------

-- a link-time address -> its file offset, through readelf's LOAD headers
local function file_offset(path, vaddr)
  for _, seg in ipairs(readelf_loads(path)) do
    if vaddr >= seg.vaddr and vaddr < seg.vaddr + seg.filesz then return vaddr - seg.vaddr + seg.offset end
  end
end

eq(R.binary_read(b, syms.message.addr, syms.message.size), "reticle-binary-test\0", "message")
eq(R.binary_read(b, syms.main.addr, syms.main.size), file_bytes(pie, file_offset(pie, syms.main.addr), syms.main.size),
   "main's code")
eq(R.binary_read(b, syms.zeros.addr, syms.zeros.size), string.rep("\0", syms.zeros.size), ".bss reads as zeros")
eq(R.binary_read(b, syms.main.addr, 0), "", "no bytes")
local data = readelf_loads(pie)[#readelf_loads(pie)]
assert(data.memsz > data.filesz, "the data segment has .bss")
local edge = data.vaddr + data.filesz - 4
eq(R.binary_read(b, edge, 8), file_bytes(pie, data.offset + data.filesz - 4, 4) .. "\0\0\0\0", "file then zeros")
local lsyms = nm(libc, "-D")
eq(R.binary_read(lc, lsyms.printf.addr, 64), file_bytes(libc, file_offset(libc, lsyms.printf.addr), 64), "libc's printf")
raises("binary_read: ", R.binary_read, b, data.vaddr + data.memsz - 4, 8)
raises("binary_read: ", R.binary_read, b, 0x7ff000000000, 1)
raises("bad argument #3", R.binary_read, b, syms.main.addr, -1)

local relro, relro_size = readelf_relro(pie)
local tbl = syms["table.0"]
assert(tbl.addr >= relro and tbl.addr + tbl.size <= relro + relro_size, "the goto table is in RELRO")
eq(R.binary_is_readonly(b, tbl.addr, tbl.size), true, "RELRO is read-only")
eq(R.binary_is_readonly(b, relro + relro_size - 8, 16), false, "past RELRO's end")
eq(R.binary_is_readonly(b, syms.message.addr, syms.message.size), true, ".rodata is read-only")
eq(R.binary_is_readonly(b, syms.main.addr, syms.main.size), true, ".text is read-only")
eq(R.binary_is_readonly(b, syms.counter.addr, 4), false, ".data is written")
eq(R.binary_is_readonly(b, syms.zeros.addr, 16), false, ".bss is written")
eq(R.binary_is_readonly(b, 0x7ff000000000, 1), false, "outside the segments")

-- Code pointers: the RELATIVE relocations readelf lists whose addend lies
-- strictly inside a function symbol (the goto table's labels)
local want_cp = {}
for l in lines(sh("readelf -rW " .. pie)) do
  local where, addend = l:match("^(%x+)%s+%x+%s+R_X86_64_RELATIVE%s+(%x+)")
  if where then
    for _, sym in pairs(syms) do
      if sym.kind:lower() == "t" and hex(addend) > sym.addr and hex(addend) < sym.addr + sym.size then
        want_cp[hex(where)] = hex(addend)
      end
    end
  end
end
local targets, ncp = {}, 0
for where, target in pairs(want_cp) do ncp = ncp + 1 end
eq(ncp, 3, "three labels in the goto table")
eq(R.binary_code_pointer_count(b), ncp, "code pointer count")
for i = 0, ncp - 1 do
  local p = R.binary_code_pointer(b, i)
  eq(p.target, want_cp[p.where], string.format("code pointer at %x", p.where))
  assert(i == 0 or p.target > targets[#targets], "code pointers sorted by target")
  targets[#targets + 1] = p.target
end
eq(R.binary_code_pointer(b, ncp), nil, "code pointer past the last")

-- FDEs: readelf -wf's
local fdes = select(2, sh("readelf -wf " .. pie):gsub(" FDE cie=", ""))
eq(R.binary_fde_count(b), fdes, "FDE count")
-- (readelf exits 1 on libc, having printed them all: a note on a NOBITS .eh_frame)
local lfdes = select(2, sh("readelf -wf " .. libc, true):gsub(" FDE cie=", ""))
eq(R.binary_fde_count(lc), lfdes, "libc's FDE count")

-- The image alone: the same bytes and lines, no discovery
local img = R.binary_open_image(pie)
eq(R.binary_function_count(img), 0, "no functions in an image")
eq(R.binary_code_pointer_count(img), 0, "no code pointers in an image")
eq(R.binary_identity(img), R.binary_identity(b), "identity of the image")
eq(R.binary_read(img, syms.main.addr, syms.main.size), R.binary_read(b, syms.main.addr, syms.main.size), "image bytes")
eq(select(2, R.binary_source_line(img, syms.sum_squares.addr)), select(2, R.binary_source_line(b, syms.sum_squares.addr)),
   "image lines")

-- Source lines: addr2line's ----------------------------------------------------

-- ADDRS -> { "file:line", ... } as addr2line prints them (no discriminators)
local function addr2line(path, addrs)
  local args = {}
  for i, a in ipairs(addrs) do args[i] = string.format("0x%x", a) end
  local out = {}
  for l in lines(sh("addr2line -e " .. path .. " " .. table.concat(args, " "))) do
    out[#out + 1] = (l:gsub(" %(discriminator %d+%)", ""))
  end
  return out
end

eq(R.binary_has_source_lines(b), true, "t has DWARF")
eq(R.binary_has_source_lines(e), false, "tn has no DWARF")
local ranges, starts = {}, {}
eq(R.binary_foreach_source_range(b, function(r)
  assert(r.addr < r["end"], "an empty range")
  ranges[#ranges + 1] = r
  if not r.shared_start then
    starts[#starts + 1] = r.addr
    starts[#starts + 1] = r["end"] - 1
  end
end), nil, "a walk to the end returns nil")
assert(#starts >= 20, "few line ranges: " .. #starts)
local where = addr2line(pie, starts)
for i, a in ipairs(starts) do
  local file, line = R.binary_source_line(b, a)
  eq(file .. ":" .. line, where[i], string.format("source line of %x", a))
end
-- the ranges the rows of objdump's decoded line table make: each row up
-- to the next of its sequence; a row the next one starts with too is an
-- empty range, and the range after it shares its start
local want_ranges, rows, empty_at = {}, {}, nil
for l in lines(sh("objdump --dwarf=decodedline " .. pie) .. "\n\n") do
  local file, line, addr = l:match("^(%S+)%s+([%d-]+)%s+0x(%x+)")
  if file then rows[#rows + 1] = { file = file, line = tonumber(line), addr = hex(addr) } end
  if line == "-" then   -- the end of a sequence
    for i = 1, #rows - 1 do
      local r, next_addr = rows[i], rows[i + 1].addr
      if next_addr <= r.addr then
        empty_at = r.addr
      elseif r.line > 0 then
        want_ranges[#want_ranges + 1] = { addr = r.addr, ["end"] = next_addr, line = r.line, file = r.file,
                                          shared_start = empty_at == r.addr }
      end
    end
    rows = {}
  end
end
eq(#ranges, #want_ranges, "line ranges (objdump --dwarf=decodedline)")
-- libdw hands the rows over sorted by address; objdump in the file's order
local function by_addr(x, y) return x.addr < y.addr or x.addr == y.addr and x["end"] < y["end"] end
table.sort(want_ranges, by_addr)
table.sort(ranges, by_addr)
for i, r in ipairs(ranges) do
  local w = want_ranges[i]
  eq(r.file, src, "range file")
  eq(r.file:match("[^/]+$"), w.file, "range file name")
  for _, k in ipairs({ "addr", "end", "line", "shared_start" }) do eq(r[k], w[k], "range " .. i .. " " .. k) end
end
eq(R.binary_source_line(b, printf_plt.addr), nil, "no line in the PLT")
eq(R.binary_source_line(e, syms.main.addr), nil, "no lines without DWARF")

-- functions and labels where the source writes them
local names = {}
eq(R.binary_foreach_source_name(b, function(n) names[#names + 1] = n end), nil, "source names to the end")
local labels = {}
for _, n in ipairs(names) do
  eq(n.file, src, "source name file")
  if n.is_label then
    labels[n.line] = n.addr
  else
    local decl = n.name == "main" and "int main(" or "__attribute__((noinline)) int " .. n.name .. "("
    eq(n.line, line_of(decl), n.name .. ": line")
  end
end
local named = {}
for _, n in ipairs(names) do
  if not n.is_label then
    named[n.name] = true
    eq(n.addr, syms[n.name].addr, n.name .. ": addr")
    eq(n.size, syms[n.name].size, n.name .. ": size")
  end
end
assert(named.sum_squares and named.dispatch and named.main, "source names of sum_squares, dispatch, main")
-- the labels are the goto table's targets
for _, text in ipairs({ "add:", "sub:", "done:" }) do
  local addr = labels[line_of(text)]
  assert(addr, "no label at " .. text)
  local found = false
  for _, t in ipairs(targets) do found = found or t == addr end
  assert(found, text .. " is no code pointer target")
end

-- inlined code: addr2line -i names the inlined function, then DEPTH callers
local inlines = {}
R.binary_foreach_inline_range(b, function(r) inlines[#inlines + 1] = r end)
assert(#inlines >= 1, "square was inlined")
for _, r in ipairs(inlines) do
  local frames = {}
  for l in lines(sh(string.format("addr2line -f -i -e %s 0x%x", pie, r.addr))) do
    if not l:find(":") then frames[#frames + 1] = l end
  end
  eq(r.name, frames[1], "inlined function")
  eq(r.depth, #frames - 1, r.name .. ": depth")
  eq(R.binary_find_function(b, r.addr).name, frames[#frames], "function inlined into")
  assert(r["end"] <= syms[frames[#frames]].addr + syms[frames[#frames]].size, "inline range inside its function")
end
eq(inlines[1].name, "square", "the inlined function")
eq(inlines[1].depth, 1, "square's depth")

-- no DWARF: the walks fail and say which
raises("binary_foreach_source_range: ", R.binary_foreach_source_range, e, function() end)
raises("binary_foreach_source_name: ", R.binary_foreach_source_name, e, function() end)
raises("binary_foreach_inline_range: ", R.binary_foreach_inline_range, e, function() end)

-- Symbols: readelf -s's ---------------------------------------------------------

for _, c in ipairs({ { b, pie, ".symtab" }, { R.binary_open(stripped), stripped, ".dynsym" }, { lc, libc, ".dynsym" } }) do
  local bin, path, tab = c[1], c[2], c[3]
  local want = readelf_symbols(path, tab)
  local n, last = 0, 0
  R.binary_foreach_symbol(bin, function(sym)
    n = n + 1
    assert(sym.index > last, "symbols in table order")
    last = sym.index
    local w = want[sym.index]
    assert(w, path .. ": symbol " .. sym.index .. " is not in readelf's " .. tab)
    for k, v in pairs(w) do eq(sym[k], v, path .. ": symbol " .. sym.name .. " " .. k) end
  end)
  local count = 0
  for _ in pairs(want) do count = count + 1 end
  eq(n, count, path .. ": symbol count")
end

-- a walk stops at the function's first true result, which it returns
local visits = 0
local hit = R.binary_foreach_symbol(b, function(sym)
  visits = visits + 1
  if sym.name == "main" then return sym end
end)
eq(hit.name, "main", "the symbol that stopped the walk")
eq(hit.addr, syms.main.addr, "main's address")
assert(visits < 30, "the walk went on after main")
eq(R.binary_foreach_source_range(b, function() return 42 end), 42, "a stopped range walk")
eq(R.binary_foreach_inline_range(b, function(r) return r.name end), "square", "a stopped inline walk")
eq(R.binary_foreach_source_name(b, function() return false end), nil, "false goes on")
-- an error in the function reaches the caller; the binary stays usable
raises("boom in a walk", R.binary_foreach_symbol, b, function() error("boom in a walk") end)
raises("bad argument #2", R.binary_foreach_symbol, b, 7)
raises("binary_close: a foreach", R.binary_foreach_symbol, b, function() R.binary_close(b) end)
eq(R.binary_path(b), pie, "still open after the walks")

-- Demangling: c++filt's, Rust's without the hash ------------------------------

local mangled = { "_ZN3foo3barEv", "_ZNSt6vectorIiSaIiEE9push_backERKi", "_ZN3foo3barEv@plt",
                  "_ZN3foo3barEv@@VERS_1.0", "_ZN4core3ptr13drop_in_place17h0123456789abcdefE",
                  "_ZNK3ns1C3getILi3EEEPKcv", "main", "sub_401000", "_Z", "printf@plt" }
local filt = {}
for l in lines(sh("printf '%s\\n' '" .. table.concat(mangled, "' '") .. "' | c++filt")) do filt[#filt + 1] = l end
for i, name in ipairs(mangled) do
  local want = filt[i] ~= name and filt[i] or nil
  -- Rust's as valgrind and perf print them: c++filt's without the hash
  if want and name:match("17h%x+E$") then want = want:gsub("::h%x+$", "") end
  eq(R.demangle(name), want, "demangle " .. name)
end
raises("bad argument #1", R.demangle, nil)

-- Closing ----------------------------------------------------------------------

for _, bin in ipairs({ b, e, s, tr, lc, img }) do
  R.binary_close(bin)
  R.binary_close(bin)   -- twice: harmless
end
raises("closed", R.binary_path, b)
raises("closed", R.binary_read, lc, 0, 1)
raises("bad argument #1", R.binary_close, "not a binary")
-- the methods are the same entries
local m = R.binary_open(pie)
eq(m:path(), pie, "b:path()")
eq(m:entry(), readelf_header(pie).entry, "b:entry()")
eq(m["function"](m, 0).addr, funcs[1].addr, "b['function']")
m:close()
raises("closed", function() return m:kind() end)

print("ok")
