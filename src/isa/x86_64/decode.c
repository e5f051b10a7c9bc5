/* x86-64 decoding with Zydis 4, reduced to struct x86_insn. */
#include <pthread.h>
#include <Zydis/Zydis.h>
#include <reticle/error.h>
#include "isa/x86_64/insn.h"

static ZydisDecoder decoder;
static pthread_once_t decoder_once = PTHREAD_ONCE_INIT;

/* Once per process, whichever thread decodes first (warm start decodes on
 * a helper thread): the decoder is read-only afterwards. */
static void decoder_init(void)
{
	ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

/* Zydis flag masks -> reticle's six-bit set (CF PF AF ZF SF OF). */
static uint8_t flag_bits(ZydisAccessedFlagsMask m)
{
	return ((m & ZYDIS_CPUFLAG_CF) ? 1 : 0) | ((m & ZYDIS_CPUFLAG_PF) ? 2 : 0) |
	       ((m & ZYDIS_CPUFLAG_AF) ? 4 : 0) | ((m & ZYDIS_CPUFLAG_ZF) ? 8 : 0) |
	       ((m & ZYDIS_CPUFLAG_SF) ? 16 : 0) | ((m & ZYDIS_CPUFLAG_OF) ? 32 : 0);
}

static int8_t gpr(ZydisRegister r)
{
	if (r == ZYDIS_REGISTER_NONE)
		return -1;
	if (r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP)
		return 16;
	r = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15)
		return (int8_t)(r - ZYDIS_REGISTER_RAX);
	return -2;  /* not a general-purpose register */
}

/* Shifts and rotates by a variable count leave the flags untouched when the
 * count is zero, so they cannot be trusted to kill flags. The count is an
 * immediate (raw.imm), the constant 1 (opcodes D0/D1), or CL. */
static bool writes_flags_conditionally(const ZydisDecodedInstruction *in)
{
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_SHL: case ZYDIS_MNEMONIC_SHR: case ZYDIS_MNEMONIC_SAR:
	case ZYDIS_MNEMONIC_ROL: case ZYDIS_MNEMONIC_ROR: case ZYDIS_MNEMONIC_RCL:
	case ZYDIS_MNEMONIC_RCR: case ZYDIS_MNEMONIC_SHLD: case ZYDIS_MNEMONIC_SHRD:
		if (in->raw.imm[0].size)
			return (in->raw.imm[0].value.u & 0x3f) == 0;
		return !(in->opcode == 0xd0 || in->opcode == 0xd1);
	default:
		return false;
	}
}

static uint8_t classify(const ZydisDecodedInstruction *in)
{
	bool rel = in->attributes & ZYDIS_ATTRIB_IS_RELATIVE;

	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_JRCXZ: case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE: case ZYDIS_MNEMONIC_LOOPNE:
		return X86_LOOP;
	case ZYDIS_MNEMONIC_UD2: case ZYDIS_MNEMONIC_HLT: case ZYDIS_MNEMONIC_INT3:
		return X86_STOP;
	case ZYDIS_MNEMONIC_XBEGIN:
		return X86_UNSUPPORTED;
	default:
		break;
	}
	bool far = in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
	/* a direct branch has a relative immediate; 'call [rip+X]' is relative
	 * only through its memory operand */
	bool direct = in->raw.imm[0].size && in->raw.imm[0].is_relative;
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		return X86_JCC;
	case ZYDIS_CATEGORY_UNCOND_BR:
		return far ? X86_UNSUPPORTED : direct ? X86_JMP : X86_IJMP;
	case ZYDIS_CATEGORY_CALL:
		return far ? X86_UNSUPPORTED : direct ? X86_CALL : X86_ICALL;
	case ZYDIS_CATEGORY_RET:
		return far ? X86_STOP : X86_RET;
	default:
		/* Any other instruction with a relative immediate cannot be moved. */
		if (rel && in->raw.imm[0].is_relative)
			return X86_UNSUPPORTED;
		return X86_OTHER;
	}
}

/* Memory operand details, decoded only for instructions that have one:
 * operand decoding costs as much as the rest of the decode. */
static void decode_memory(ZydisDecoderContext *ctx, const ZydisDecodedInstruction *in,
			  uint64_t addr, struct x86_insn *out)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeOperands(&decoder, ctx, in, ops, in->operand_count_visible)))
		return;
	for (int i = 0; i < in->operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && i == 0 &&
		    (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			out->dst_reg = gpr(op->reg.value);
		if (op->type != ZYDIS_OPERAND_TYPE_MEMORY ||
		    (op->mem.type != ZYDIS_MEMOP_TYPE_AGEN && op->mem.type != ZYDIS_MEMOP_TYPE_MEM))
			continue;
		out->has_mem = true;
		out->mem.base = gpr(op->mem.base);
		out->mem.index = gpr(op->mem.index);
		out->mem.scale = op->mem.scale ? op->mem.scale : 1;
		out->mem.disp = op->mem.disp.has_displacement ? op->mem.disp.value : 0;
		out->disp_off = in->raw.disp.offset;
		out->disp_size = in->raw.disp.size / 8;
		if (out->mem.base == 16) {
			ZyanU64 t;
			ZydisCalcAbsoluteAddress(in, op, addr, &t);
			out->rip_rel = true;
			out->target = t;
		}
	}
}

int x86_decode(const uint8_t *code, size_t len, uint64_t addr, struct x86_insn *out)
{
	ZydisDecodedInstruction in;
	ZydisDecoderContext ctx;

	pthread_once(&decoder_once, decoder_init);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &ctx, code, len, &in)))
		return -RTL_ERR_DECODE;

	*out = (struct x86_insn){ .addr = addr, .len = in.length, .dst_reg = -1,
				  .mem = { .base = -1, .index = -1, .scale = 1 } };
	out->kind = classify(&in);
	out->is_nop = in.mnemonic == ZYDIS_MNEMONIC_NOP;
	out->prefix_len = in.raw.prefix_count;
	out->opcode = in.opcode;
	out->rep = (in.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
				     ZYDIS_ATTRIB_HAS_REPNE)) &&
		   in.meta.category == ZYDIS_CATEGORY_STRINGOP;
	/* rcx is the count only with 64-bit addressing (a 0x67 prefix makes it
	 * ecx): other forms are counted once, like any instruction */
	bool rcx_count = out->rep && in.address_width == 64;
	out->rep_plain = rcx_count && !(in.attributes & (ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE));
	out->rep_cond = rcx_count && !out->rep_plain;
	out->repne = out->rep_cond && (in.attributes & ZYDIS_ATTRIB_HAS_REPNE);
	if (in.cpu_flags) {
		out->flags_read = flag_bits(in.cpu_flags->tested);
		if (!writes_flags_conditionally(&in))
			out->flags_written = flag_bits(in.cpu_flags->modified | in.cpu_flags->set_0 |
						       in.cpu_flags->set_1 | in.cpu_flags->undefined);
	}
	if (out->kind == X86_JCC)
		out->cc = in.opcode & 0x0f;   /* 0x7x or 0x0f 0x8x: low nibble is the condition */
	if (out->kind == X86_JMP || out->kind == X86_JCC || out->kind == X86_CALL ||
	    out->kind == X86_LOOP)
		out->target = addr + in.length + (uint64_t)in.raw.imm[0].value.s;
	if ((in.attributes & ZYDIS_ATTRIB_HAS_MODRM) && in.raw.modrm.mod != 3)
		decode_memory(&ctx, &in, addr, out);
	out->is_lea = in.mnemonic == ZYDIS_MNEMONIC_LEA;
	out->is_movsxd4 = in.mnemonic == ZYDIS_MNEMONIC_MOVSXD && out->has_mem &&
			  out->mem.scale == 4 && out->mem.base >= 0 && out->mem.base < 16 &&
			  out->mem.index >= 0;
	return 0;
}

/* Full decode with every operand, hidden ones included: for the rare
 * questions the relocator's summary does not answer. */
static bool decode_full(const uint8_t *code, size_t len, ZydisDecodedInstruction *in,
			ZydisDecodedOperand *ops)
{
	pthread_once(&decoder_once, decoder_init);
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code, len, in, ops));
}

static uint32_t bit(ZydisRegister reg)
{
	int8_t r = gpr(reg);
	return r >= 0 && r < 16 ? 1u << r : 0;
}

void x86_regs_rw(const uint8_t *code, size_t len, uint16_t *read, uint16_t *killed)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	*read = *killed = 0;
	if (!decode_full(code, len, &in, ops)) {
		*read = 0xffff;   /* unknown: reads everything, kills nothing */
		return;
	}
	for (int i = 0; i < in.operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
			*read |= (uint16_t)(bit(op->mem.base) | bit(op->mem.index));
			continue;
		}
		if (op->type != ZYDIS_OPERAND_TYPE_REGISTER)
			continue;
		uint16_t b = (uint16_t)bit(op->reg.value);
		if (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ)
			*read |= b;
		/* a write of 8 or 16 bits keeps the rest: a use, not a kill;
		 * 32-bit writes zero the upper half */
		if (op->actions & ZYDIS_OPERAND_ACTION_WRITE) {
			if (op->size >= 32)
				*killed |= b;
			else
				*read |= b;
		} else if (op->actions & ZYDIS_OPERAND_ACTION_CONDWRITE) {
			*read |= b;
		}
	}
}

bool x86_mov_imm(const uint8_t *code, size_t len, int *reg, uint64_t *imm)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(code, len, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_MOV ||
	    ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
		return false;
	int8_t r = gpr(ops[0].reg.value);
	if (r < 0 || r > 15 || (ops[0].size != 32 && ops[0].size != 64))
		return false;
	*reg = r;
	/* a 32-bit destination zero-extends; a 64-bit one gets imm32
	 * sign-extended or a full imm64: Zydis gives the value as written */
	*imm = ops[0].size == 32 ? (uint32_t)ops[1].imm.value.u : ops[1].imm.value.u;
	return true;
}

bool x86_reg_step(const uint8_t *code, size_t len, int reg, int64_t *delta)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(code, len, &in, ops))
		return false;
	bool self = ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && gpr(ops[0].reg.value) == reg &&
		    ops[0].size == 64;
	switch (in.mnemonic) {
	case ZYDIS_MNEMONIC_ADD:
	case ZYDIS_MNEMONIC_SUB:
		if (!self || ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
			return false;
		*delta = in.mnemonic == ZYDIS_MNEMONIC_ADD ? ops[1].imm.value.s : -ops[1].imm.value.s;
		return true;
	case ZYDIS_MNEMONIC_INC:
	case ZYDIS_MNEMONIC_DEC:
		*delta = in.mnemonic == ZYDIS_MNEMONIC_INC ? 1 : -1;
		return self;
	case ZYDIS_MNEMONIC_LEA:
		if (!self || gpr(ops[1].mem.base) != reg || ops[1].mem.index != ZYDIS_REGISTER_NONE ||
		    in.address_width != 64)
			return false;
		*delta = ops[1].mem.disp.value;
		return true;
	case ZYDIS_MNEMONIC_PUSH:
	case ZYDIS_MNEMONIC_POP:
		/* (not pop rsp: it loads rsp) */
		if (reg != 4 || in.operand_width != 64 ||
		    (in.mnemonic == ZYDIS_MNEMONIC_POP && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		     gpr(ops[0].reg.value) == 4))
			return false;
		*delta = in.mnemonic == ZYDIS_MNEMONIC_PUSH ? -8 : 8;
		return true;
	default:
		return false;
	}
}

int x86_jmp_register(const uint8_t *code, size_t len)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(code, len, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_JMP ||
	    ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return -1;
	int8_t r = gpr(ops[0].reg.value);
	return r >= 0 && r < 16 ? r : -1;
}

bool x86_cmp_imm(const uint8_t *code, size_t len, int *reg, uint64_t *imm)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(code, len, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_CMP ||
	    ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
	    (ops[0].size != 32 && ops[0].size != 64))
		return false;
	int8_t r = gpr(ops[0].reg.value);
	if (r < 0 || r > 15 || (ops[0].size == 64 && ops[1].imm.value.s < 0))
		return false;
	*reg = r;
	*imm = ops[0].size == 32 ? (uint32_t)ops[1].imm.value.u : ops[1].imm.value.u;
	return true;
}

uint16_t x86_regs_written(const uint8_t *code, size_t len)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(code, len, &in, ops))
		return 0xffff;
	uint16_t w = 0;
	for (int i = 0; i < in.operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (ops[i].actions & (ZYDIS_OPERAND_ACTION_MASK_WRITE)))
			w |= (uint16_t)bit(ops[i].reg.value);
	return w;
}

bool x86_movzx_byte(const uint8_t *code, size_t len, int *reg)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(code, len, &in, ops) || in.mnemonic != ZYDIS_MNEMONIC_MOVZX ||
	    ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[1].size != 8 ||
	    (ops[0].size != 32 && ops[0].size != 64))
		return false;
	int8_t r = gpr(ops[0].reg.value);
	*reg = r;
	return r >= 0 && r < 16;
}

enum {
	P_RIP_REL = 1, P_HAS_MEM = 2, P_IS_LEA = 4, P_MOVSXD4 = 8, P_REP = 16, P_REP_PLAIN = 32,
	P_REP_COND = 64, P_REPNE = 128,
	P2_NOP = 1, P2_TARGET = 2,   /* target set: a branch or a rip-relative operand */
};

/* Whether the instruction's target field means something: a direct branch
 * or a rip-relative operand (its target may be address 0, a binary's
 * __ehdr_start at link time). */
static bool has_target(const struct x86_insn *in)
{
	return in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_CALL ||
	       in->kind == X86_LOOP || in->rip_rel;
}

bool x86_pack(const struct x86_insn *in, struct x86_packed *out)
{
	int64_t rel = (int64_t)(in->target - (in->addr + in->len));
	bool target = has_target(in);
	if (in->mem.disp != (int32_t)in->mem.disp || (target && rel != (int32_t)rel) ||
	    (!target && in->target))
		return false;
	*out = (struct x86_packed){
		.len = in->len, .kind = in->kind, .opcode = in->opcode, .cc = in->cc,
		.prefix_len = in->prefix_len, .flags_read = in->flags_read,
		.flags_written = in->flags_written,
		.bits = (uint8_t)((in->rip_rel ? P_RIP_REL : 0) | (in->has_mem ? P_HAS_MEM : 0) |
				  (in->is_lea ? P_IS_LEA : 0) | (in->is_movsxd4 ? P_MOVSXD4 : 0) |
				  (in->rep ? P_REP : 0) | (in->rep_plain ? P_REP_PLAIN : 0) |
				  (in->rep_cond ? P_REP_COND : 0) | (in->repne ? P_REPNE : 0)),
		.bits2 = (uint8_t)((in->is_nop ? P2_NOP : 0) | (target ? P2_TARGET : 0)),
		.dst_reg = in->dst_reg, .base = in->mem.base, .index = in->mem.index,
		.scale = in->mem.scale, .disp_off = in->disp_off, .disp_size = in->disp_size,
		.disp = (int32_t)in->mem.disp, .target = target ? (int32_t)rel : 0,
	};
	return true;
}

void x86_unpack(const struct x86_packed *p, uint64_t addr, struct x86_insn *out)
{
	*out = (struct x86_insn){
		.addr = addr, .len = p->len, .kind = p->kind, .opcode = p->opcode, .cc = p->cc,
		.prefix_len = p->prefix_len, .flags_read = p->flags_read,
		.flags_written = p->flags_written,
		.rip_rel = p->bits & P_RIP_REL, .has_mem = p->bits & P_HAS_MEM,
		.is_lea = p->bits & P_IS_LEA, .is_movsxd4 = p->bits & P_MOVSXD4,
		.rep = p->bits & P_REP, .rep_plain = p->bits & P_REP_PLAIN,
		.rep_cond = p->bits & P_REP_COND, .repne = p->bits & P_REPNE,
		.dst_reg = p->dst_reg, .disp_off = p->disp_off, .disp_size = p->disp_size,
		.target = (p->bits2 & P2_TARGET) ? addr + p->len + (uint64_t)(int64_t)p->target : 0,
		.mem = { .base = p->base, .index = p->index, .scale = p->scale, .disp = p->disp },
		.is_nop = p->bits2 & P2_NOP,
	};
}

/* rbx, rsp, rbp, r12-r15: what an epilogue puts back. */
static bool callee_saved(int8_t r)
{
	return r == 3 || r == 4 || r == 5 || (r >= 12 && r <= 15);
}

bool x86_is_epilogue(const uint8_t *code, size_t len)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	if (!decode_full(code, len, &in, ops))
		return false;
	switch (in.mnemonic) {
	case ZYDIS_MNEMONIC_RET:
	case ZYDIS_MNEMONIC_LEAVE:
		return true;
	case ZYDIS_MNEMONIC_POP:
		return ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && callee_saved(gpr(ops[0].reg.value));
	case ZYDIS_MNEMONIC_MOV:
		/* the return value moved into rax, or a saved register
		 * reloaded from the frame */
		if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && gpr(ops[0].reg.value) == 0 &&
		    ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER)
			return true;
		return ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && callee_saved(gpr(ops[0].reg.value)) &&
		       ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		       (gpr(ops[1].mem.base) == 4 || gpr(ops[1].mem.base) == 5) &&
		       ops[1].mem.index == ZYDIS_REGISTER_NONE;
	case ZYDIS_MNEMONIC_MOVQ:
	case ZYDIS_MNEMONIC_MOVD:
		/* -O0's return value passed through rax into xmm0 */
		return ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		       ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER;
	case ZYDIS_MNEMONIC_ADD:
	case ZYDIS_MNEMONIC_LEA:
		/* the frame released */
		return ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && gpr(ops[0].reg.value) == 4;
	default:
		return false;
	}
}

/* The kind of an explicit operand's access from what the instruction does
 * with it: valgrind's L, S or M. */
static uint8_t access_kind(ZydisOperandActions a)
{
	bool r = a & ZYDIS_OPERAND_ACTION_MASK_READ, w = a & ZYDIS_OPERAND_ACTION_MASK_WRITE;
	return r && w ? X86_ACC_MODIFY : w ? X86_ACC_STORE : X86_ACC_LOAD;
}

static struct x86_access stack_access(int32_t adjust, uint8_t kind)
{
	return (struct x86_access){ .mem = { .base = 4, .index = -1, .scale = 1, .disp = adjust }, .size = 8,
				    .kind = kind };
}

int x86_data_accesses(const uint8_t *code, size_t len, uint64_t addr, struct x86_access *out, int max)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(code, len, &in, ops))
		return -1;
	if (in.mnemonic == ZYDIS_MNEMONIC_NOP || in.mnemonic == ZYDIS_MNEMONIC_LEA ||
	    in.meta.category == ZYDIS_CATEGORY_PREFETCH)
		return 0;   /* an address, no access */
	/* xsave, fxsave and kin: how much they touch depends on the state
	 * components enabled (XCR0, 2,432 bytes on one host) and in use, not
	 * on the operand (Zydis gives 576 bytes): not from registers */
	if (in.meta.isa_set == ZYDIS_ISA_SET_XSAVE || in.meta.isa_set == ZYDIS_ISA_SET_XSAVEC ||
	    in.meta.isa_set == ZYDIS_ISA_SET_XSAVEOPT || in.meta.isa_set == ZYDIS_ISA_SET_XSAVES ||
	    in.meta.isa_set == ZYDIS_ISA_SET_FXSAVE || in.meta.isa_set == ZYDIS_ISA_SET_FXSAVE64)
		return -1;
	int n = 0;
	bool stack_store = false, stack_load = false;
	switch (in.mnemonic) {
	case ZYDIS_MNEMONIC_PUSH: case ZYDIS_MNEMONIC_PUSHFQ: case ZYDIS_MNEMONIC_CALL:
		stack_store = true;
		break;
	case ZYDIS_MNEMONIC_POP: case ZYDIS_MNEMONIC_POPFQ: case ZYDIS_MNEMONIC_RET:
		stack_load = true;
		break;
	case ZYDIS_MNEMONIC_LEAVE:   /* mov rsp,rbp; pop rbp */
		if (max < 1)
			return -1;
		out[0] = (struct x86_access){ .mem = { .base = 5, .index = -1, .scale = 1 }, .size = 8,
					      .kind = X86_ACC_LOAD };
		return 1;
	default:
		break;
	}
	if (stack_load) {   /* read before the instruction moves rsp */
		if (n >= max)
			return -1;
		out[n++] = stack_access(0, X86_ACC_LOAD);
	}
	for (int i = 0; i < in.operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		/* the stack slots of push, pop, call and ret are above; string
		 * instructions' [rsi]/[rdi] are explicit enough */
		int8_t base = gpr(op->mem.base), index = gpr(op->mem.index);
		if (op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN && base == 4 && (stack_store || stack_load))
			continue;
		if (op->mem.type == ZYDIS_MEMOP_TYPE_AGEN)
			continue;
		if (op->mem.type != ZYDIS_MEMOP_TYPE_MEM || in.address_width != 64 || base == -2 || index == -2 ||
		    op->mem.segment == ZYDIS_REGISTER_GS ||
		    (in.attributes & (ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE)) || n >= max)
			return -1;   /* gathers, repe/repne strings, the program's own %gs: not from registers */
		if (stack_load && (base == 4 || index == 4))
			return -1;   /* pop [rsp+X]: its address is taken after rsp moves */
		struct x86_access a = {
			.mem = { .base = base, .index = index, .scale = op->mem.scale ? op->mem.scale : 1,
				 .disp = op->mem.disp.has_displacement ? op->mem.disp.value : 0 },
			.size = (uint16_t)(op->size / 8),
			.kind = access_kind(op->actions),
			.fs = op->mem.segment == ZYDIS_REGISTER_FS,
			.rep = (in.attributes & ZYDIS_ATTRIB_HAS_REP) && in.meta.category == ZYDIS_CATEGORY_STRINGOP,
		};
		if (base == 16) {
			ZyanU64 t;
			if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, op, addr, &t)))
				return -1;
			a.abs = t;
		}
		if (!a.size)
			return -1;   /* xsave, fxsave and kin: a size of their own */
		/* what is read before what is written (movs: [rsi], then [rdi]) */
		int at = n;
		while (a.kind == X86_ACC_LOAD && at > 0 && out[at - 1].kind == X86_ACC_STORE && !stack_load) {
			out[at] = out[at - 1];
			at--;
		}
		out[at] = a;
		n++;
	}
	if (stack_store) {
		if (n >= max)
			return -1;
		out[n++] = stack_access(-8, X86_ACC_STORE);
	}
	return n;
}
