/* The simulator API on a hand-assembled RV64 program (no cross compiler
 * needed): addi a0, x0, 42; addi a7, x0, 93; ecall (exit 42). Expectations
 * come from the RISC-V encodings, not from reticle. */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <reticle/error.h>
#include <reticle/sim.h>
#include "check.h"

static const uint32_t code[] = { 0x02a00513, 0x05d00893, 0x00000073 };
#define BASE 0x10000ull
#define ENTRY (BASE + sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr))

static void write_elf(const char *path, int machine)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph = { 0 };
	FILE *f = fopen(path, "wb");

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = machine;
	eh.e_version = EV_CURRENT;
	eh.e_entry = ENTRY;
	eh.e_phoff = sizeof eh;
	eh.e_ehsize = sizeof eh;
	eh.e_phentsize = sizeof ph;
	eh.e_phnum = 1;
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_vaddr = ph.p_paddr = BASE;
	ph.p_filesz = ph.p_memsz = sizeof eh + sizeof ph + sizeof code;
	ph.p_align = 4096;
	fwrite(&eh, sizeof eh, 1, f);
	fwrite(&ph, sizeof ph, 1, f);
	fwrite(code, sizeof code, 1, f);
	fclose(f);
}

static int before_addi, at_ecall, after_ecall;
static uint64_t a0_at_ecall;

static void on_addi(struct rtl_sim *sim, const struct rtl_sim_insn *i, void *user)
{
	CHECK_STR(rtl_sim_insn_name(sim, i), "addi");
	CHECK_EQ(rtl_sim_insn_len(i), 4);
	CHECK_EQ(rtl_sim_pc(sim), rtl_sim_insn_addr(i));   /* BEFORE: the pc is the instruction's */
	before_addi++;
}

static void on_ecall(struct rtl_sim *sim, const struct rtl_sim_insn *i, void *user)
{
	CHECK_EQ(rtl_sim_insn_addr(i), ENTRY + 8);
	CHECK_EQ(rtl_sim_reg(sim, "X", 10, &a0_at_ecall), 0);
	at_ecall++;
}

static void trailer(struct rtl_sim *sim, void *user)
{
	CHECK_EQ(rtl_sim_icount(sim), 3);
	after_ecall++;
}

int main(void)
{
	char path[] = "/tmp/reticle-test-sim-XXXXXX";
	int fd = mkstemp(path), status = -1;
	struct rtl_sim *sim;
	uint32_t word = 0;
	char buf[64];
	uint64_t v;

	close(fd);
	write_elf(path, EM_RISCV);
	char *argv[] = { path, "arg", NULL };
	CHECK_EQ(rtl_sim_open(NULL, 2, argv, NULL, &sim), 0);
	CHECK_STR(rtl_sim_isa_name(sim), "rv64");
	CHECK_EQ(rtl_sim_disasm(sim, ENTRY, buf, sizeof buf), 4);
	CHECK_STR(buf, "addi x10, x0, 42");
	CHECK_EQ(rtl_sim_read_mem(sim, ENTRY + 4, &word, 4), 0);
	CHECK_EQ(word, code[1]);
	CHECK_EQ(rtl_sim_read_mem(sim, 0xffffffffull, &word, 4), -EFAULT);
	CHECK_EQ(rtl_sim_reg(sim, "NOSUCH", 0, &v), -ENOENT);
	CHECK_EQ(rtl_sim_reg(sim, "X", 2, &v), 0);
	CHECK(v != 0 && (v & 15) == 0);                   /* the stack pointer is set and aligned */
	CHECK_EQ(rtl_sim_add_call_by_name(sim, "nosuchinsn", RTL_SIM_BEFORE, on_addi, NULL), -ENOENT);
	CHECK_EQ(rtl_sim_add_call_by_name(sim, "addi", RTL_SIM_BEFORE, on_addi, NULL), 0);
	CHECK_EQ(rtl_sim_add_call(sim, ENTRY + 8, RTL_SIM_BEFORE, on_ecall, NULL), 0);
	CHECK_EQ(rtl_sim_add_trailer(sim, trailer, NULL), 0);
	CHECK_EQ(rtl_sim_run(sim, &status), 0);
	CHECK_EQ(status, 42);
	CHECK_EQ(before_addi, 2);
	CHECK_EQ(at_ecall, 1);
	CHECK_EQ(a0_at_ecall, 42);
	CHECK_EQ(after_ecall, 1);
	rtl_sim_close(sim);

	/* an ELF for a machine no description covers */
	write_elf(path, EM_X86_64);
	CHECK_EQ(rtl_sim_open(NULL, 1, argv, NULL, &sim), -RTL_ERR_WRONG_ARCH);
	CHECK(strstr(rtl_sim_message(sim), "has no description") != NULL);
	rtl_sim_close(sim);
	/* a description that does not match the ELF */
	write_elf(path, EM_RISCV);
	CHECK_EQ(rtl_sim_open("mips32", 1, argv, NULL, &sim), -RTL_ERR_WRONG_ARCH);
	rtl_sim_close(sim);
	unlink(path);
	CHECK_EQ(rtl_sim_open(NULL, 1, argv, NULL, &sim), -ENOENT);
	rtl_sim_close(sim);
	return CHECK_DONE();
}
