//! Where on a function its entry probe goes, proven from the function's own instructions.
//!
//! A uprobe replaces an instruction with a breakpoint, and the kernel must then execute the
//! original somewhere. A few it emulates — `push %reg`, `call`/`jmp` to a fixed target, a
//! conditional jump, `nop` — for ~0.7 µs a hit here; every other instruction it single-steps out
//! of line, 9–16 µs a hit on this VM (`docs/probes.md`). On this machine's Debian binaries only
//! 37 % of libc's and 38 % of python3.11's functions start with `push` (after `endbr64`); 32 % of
//! libc's start with `mov`.
//!
//! So the probe goes on the **first instruction the kernel emulates**, when every instruction
//! before it is proven harmless to run unprobed:
//! - it only moves values between registers or into them (no memory operand, `lea` excepted:
//!   it computes an address and reads nothing), so it cannot fault, and no instruction that
//!   can fault without touching memory (division) is among them;
//! - it does not change `%rsp`, so at the probe the return address is still on top of the
//!   stack — where the return probe and the session's return check look for it;
//! - no jump or call of the function (or of its `.cold` part) lands inside those instructions
//!   or on the probe's own instruction (a jump there would run the probe a second time, or skip
//!   it), and the function has no jump whose target cannot be read (a jump table could land
//!   anywhere): the whole function is decoded (iced-x86) to prove it.
//!
//! `endbr64` (CET builds) only marks a valid jump target and is skipped like the rest. What
//! cannot be proven is refused with the reason, unless the caller accepts single-stepping the
//! first instruction. The time the skipped instructions take (a few register moves) is outside
//! the measured call.
//!
//! **Multi-byte NOPs.** gcc pads a loop head to 16 bytes with `nopl 0x0(%rax)` and its kin, so
//! a CET-built loop function reads `endbr64; mov %rdi,%rax; xor %ecx,%ecx; nopl 0x0(%rax)`
//! before its loop. A NOP's memory operand is never accessed, so it is harmless to skip; and
//! from Linux 6.16 the kernel emulates the NOPs of its own table (`x86_nops`, 1 to 11 bytes)
//! exactly as it does `nop`. Measured here (6.18, `perf probe` on such a function, 300,000
//! calls): 0.40 s with the probe on the `nopl`, 3.8 s on the `mov` before it (single-stepped),
//! 0.02 s unprobed. So the probe goes on that NOP; on an older kernel the NOP is skipped like
//! a register move and, if nothing later is emulated, the refusal says why the NOP was not
//! taken.

use iced_x86::{
    ConditionCode, Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction, InstructionInfoFactory,
    Mnemonic, OpAccess, OpKind, Register,
};

/// Most instructions run unprobed before the probe.
pub const MAX_SKIPPED: usize = 8;
/// Longest function decoded whole (larger ones are probed only where nothing is skipped).
pub const MAX_FUNCTION_BYTES: usize = 1 << 20;

/// Where the probe goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Bytes after the function's start.
    pub offset: u32,
    /// The instructions run before the probe, as `objdump` writes them (`endbr64` included).
    pub skipped: Vec<String>,
}

impl Placement {
    /// Whether more than `endbr64` runs before the probe: what placement adds to probing a
    /// function's first instruction (the session notes it, the census counts it).
    pub fn past_moves(&self) -> bool {
        self.skipped.iter().any(|i| i != "endbr64")
    }
}

/// Why the probe cannot go on an instruction the kernel emulates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unplaceable {
    /// The instruction a probe at the start would single-step.
    pub first: String,
    /// Why the search for a later place stopped, in words.
    pub reason: String,
    pub stop: Stop,
}

/// What stopped the search for a place, by kind (the census counts them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    /// An instruction that reads or writes memory.
    Memory,
    /// One that moves or writes the stack pointer.
    StackPointer,
    /// A jump, call or return before any emulated instruction.
    FlowControl,
    /// Another instruction (division, system instructions, vector work…) or a special register.
    Other,
    /// A jump lands among the skipped instructions.
    JumpInside,
    /// A jump whose target the code does not say (a jump table).
    UnreadableJump,
    /// The function's extent is unknown or too long, or it does not decode.
    Unchecked,
    /// More than [`MAX_SKIPPED`] instructions before an emulated one.
    TooMany,
}

impl Stop {
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::Memory => "memory access",
            Stop::StackPointer => "stack pointer",
            Stop::FlowControl => "jump, call or return",
            Stop::Other => "other instruction",
            Stop::JumpInside => "jump into the skipped bytes",
            Stop::UnreadableJump => "jump table",
            Stop::Unchecked => "extent unknown or undecodable",
            Stop::TooMany => "too many to skip",
        }
    }
}

/// The first Linux release whose uprobes emulate the multi-byte NOPs of the kernel's table.
pub const LONG_NOPS_SINCE: (u32, u32) = (6, 16);

/// The kernel's own NOP encodings of 2 to 11 bytes (`x86_nops`, 64-bit): the only multi-byte
/// forms its uprobes emulate (compared byte for byte, prefixes included).
const KERNEL_NOPS: [&[u8]; 10] = [
    &[0x66, 0x90],
    &[0x0f, 0x1f, 0x00],
    &[0x0f, 0x1f, 0x40, 0x00],
    &[0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
    &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    &[0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    &[0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
];

/// Whether the running kernel emulates multi-byte NOPs ([`LONG_NOPS_SINCE`] on), read once
/// from its release.
pub fn kernel_emulates_long_nops() -> bool {
    static KNOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KNOWN.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/osrelease").is_ok_and(|r| release_at_least(&r, LONG_NOPS_SINCE))
    })
}

/// `release` (`6.18.0-1-amd64`) is `major.minor` or later.
fn release_at_least(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let number = |p: Option<&str>| p.and_then(|p| p.parse::<u32>().ok());
    match (number(parts.next()), number(parts.next())) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

/// A function's code, as read from its file.
pub struct FunctionCode<'a> {
    /// Its virtual address (for jump targets).
    pub address: u64,
    /// Its bytes; the whole function when `whole`, else at least its first instructions.
    pub code: &'a [u8],
    /// `code` is the whole function (its symbol's size): jumps inside it can be checked.
    pub whole: bool,
    /// Other code that may jump into it (its `.cold` part): (address, bytes).
    pub related: Vec<(u64, &'a [u8])>,
    /// The kernel emulates its multi-byte NOPs ([`kernel_emulates_long_nops`]).
    pub long_nops: bool,
}

/// The place for the entry probe: the first instruction the kernel emulates, with everything
/// before it proven safe to run unprobed (see the module docs).
pub fn place(f: &FunctionCode<'_>) -> Result<Placement, Unplaceable> {
    let mut skipped: Vec<Instruction> = Vec::new();
    search(f, &mut skipped).map_err(|(stop, reason)| Unplaceable {
        first: first_instruction(f),
        reason: format!("{reason}{}", passed_nop(f, &skipped)),
        stop,
    })
}

/// [`place`]'s search, the instructions it passed over left in `skipped`.
fn search(f: &FunctionCode<'_>, skipped: &mut Vec<Instruction>) -> Result<Placement, (Stop, String)> {
    let mut decoder = Decoder::with_ip(64, f.code, f.address, DecoderOptions::NONE);
    let mut info = InstructionInfoFactory::new();
    loop {
        if !decoder.can_decode() {
            return Err((Stop::Unchecked, "the function ends before an instruction the kernel emulates".into()));
        }
        let offset = (decoder.ip() - f.address) as usize;
        let instr = decoder.decode();
        if instr.is_invalid() {
            return Err((Stop::Unchecked, format!("no valid instruction at +{offset:#x}")));
        }
        if emulated(&f.code[offset..offset + instr.len()], f.long_nops) {
            // Only what sits before the probe needs the whole function's proof.
            let unproven = skipped.iter().any(|i| i.mnemonic() != Mnemonic::Endbr64);
            if unproven {
                prove_no_jump_lands(f, offset as u64)?;
            }
            return Ok(Placement { offset: offset as u32, skipped: skipped.iter().map(text).collect() });
        }
        if let Err((stop, why)) = harmless(&instr, &mut info) {
            let at = if skipped.is_empty() { String::new() } else { format!(" at +{offset:#x}") };
            return Err((stop, format!("{}{at} {why}", text(&instr))));
        }
        if skipped.len() >= MAX_SKIPPED {
            return Err((Stop::TooMany, format!("no instruction the kernel emulates in the first {MAX_SKIPPED}")));
        }
        skipped.push(instr);
    }
}

/// For a refusal: the multi-byte NOP passed over because this kernel single-steps it, if any.
fn passed_nop(f: &FunctionCode<'_>, skipped: &[Instruction]) -> String {
    let nop = skipped.iter().find(|i| {
        let at = (i.ip() - f.address) as usize;
        i.mnemonic() == Mnemonic::Nop && KERNEL_NOPS.contains(&&f.code[at..at + i.len()])
    });
    match nop {
        Some(i) if !f.long_nops => format!(
            " (the probe would go on {} at +{:#x}, but this kernel single-steps multi-byte NOPs: Linux {}.{} emulates them)",
            text(i),
            i.ip() - f.address,
            LONG_NOPS_SINCE.0,
            LONG_NOPS_SINCE.1
        ),
        _ => String::new(),
    }
}

/// The first instruction, as `objdump` writes it (for a refusal).
fn first_instruction(f: &FunctionCode<'_>) -> String {
    let mut decoder = Decoder::with_ip(64, f.code, f.address, DecoderOptions::NONE);
    if !decoder.can_decode() {
        return "no readable instruction".into();
    }
    let instr = decoder.decode();
    if instr.is_invalid() { "an invalid instruction".into() } else { text(&instr) }
}

/// The instructions the kernel runs in place of a breakpoint without single-stepping, by their
/// exact encodings (the kernel refuses the fast path for prefixed forms): `push %reg`
/// (`50+r`, `41 50+r`), `call rel32`, `jmp rel8/rel32`, `jcc rel8/rel32`, `nop`, and where
/// `long_nops`, the kernel's own multi-byte NOPs.
fn emulated(bytes: &[u8], long_nops: bool) -> bool {
    matches!(
        bytes,
        [0x50..=0x57]
            | [0x41, 0x50..=0x57]
            | [0xe8, ..]
            | [0xe9 | 0xeb, ..]
            | [0x70..=0x7f, _]
            | [0x0f, 0x80..=0x8f, ..]
            | [0x90]
    ) || (long_nops && KERNEL_NOPS.contains(&bytes))
}

/// Can `instr` run unprobed before the probe? `Err` says why not.
fn harmless(instr: &Instruction, info: &mut InstructionInfoFactory) -> Result<(), (Stop, &'static str)> {
    if instr.flow_control() != FlowControl::Next {
        return Err((Stop::FlowControl, "changes the flow of control"));
    }
    if instr.stack_pointer_increment() != 0 {
        return Err((Stop::StackPointer, "moves the stack pointer (the return address would no longer be on top)"));
    }
    // A NOP does nothing: its memory operand (and segment prefix) is never used.
    if instr.mnemonic() == Mnemonic::Nop {
        return Ok(());
    }
    // `lea` computes an address and reads nothing.
    let reads_memory = (0..instr.op_count()).any(|i| instr.op_kind(i) == OpKind::Memory);
    if reads_memory && instr.mnemonic() != Mnemonic::Lea {
        return Err((Stop::Memory, "reads or writes memory (it could fault before the probe)"));
    }
    // `setcc` and `cmovcc` are the conditional instructions that reach here (jumps and loops
    // changed the flow; x87's `fcmovcc` uses special registers, refused below).
    if !register_only(instr.mnemonic()) && instr.condition_code() == ConditionCode::None {
        return Err((Stop::Other, "is not one of the register moves and arithmetic the probe can be placed after"));
    }
    for used in info.info(instr).used_registers() {
        // The full register: RCX for CL, ZMM3 for XMM3.
        let r = used.register().full_register();
        if !(r.is_gpr64() || r.is_zmm() || r == Register::RIP) {
            return Err((Stop::Other, "uses a special register"));
        }
        let writes = !matches!(used.access(), OpAccess::Read | OpAccess::CondRead | OpAccess::NoMemAccess);
        if r == Register::RSP && writes {
            return Err((
                Stop::StackPointer,
                "writes the stack pointer (the return address would no longer be on top)",
            ));
        }
    }
    Ok(())
}

/// Register arithmetic and moves that cannot fault with register operands (division can, and
/// is not here).
fn register_only(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(
        m,
        Endbr64
            | Nop
            | Mov
            | Movzx
            | Movsx
            | Movsxd
            | Lea
            | Xor
            | And
            | Or
            | Add
            | Sub
            | Adc
            | Sbb
            | Test
            | Cmp
            | Inc
            | Dec
            | Neg
            | Not
            | Shl
            | Shr
            | Sar
            | Rol
            | Ror
            | Imul
            | Cdqe
            | Cdq
            | Cqo
            | Cwde
            | Bswap
            | Bt
            | Xchg
            | Movd
            | Movq
            | Movaps
            | Movapd
            | Movups
            | Movdqa
            | Movdqu
            | Pxor
            | Xorps
            | Xorpd
            | Vzeroupper
            | Vpxor
            | Vmovdqa
            | Vmovdqu
    )
}

/// No jump or call inside the function (or its related code) lands in `(start, start +
/// probe]`, and none has a target that cannot be read; `Err` says which does.
fn prove_no_jump_lands(f: &FunctionCode<'_>, probe: u64) -> Result<(), (Stop, String)> {
    if !f.whole {
        return Err((
            Stop::Unchecked,
            "the symbol has no size, so jumps into the skipped instructions cannot be ruled out".into(),
        ));
    }
    if f.code.len() > MAX_FUNCTION_BYTES {
        return Err((
            Stop::Unchecked,
            format!("the function is over {MAX_FUNCTION_BYTES} bytes, too long to check for jumps"),
        ));
    }
    let inside = f.address + 1..=f.address + probe;
    for &(address, code) in std::iter::once(&(f.address, f.code)).chain(f.related.iter()) {
        let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
        let mut instr = Instruction::default();
        while decoder.can_decode() {
            decoder.decode_out(&mut instr);
            if instr.is_invalid() {
                return Err((
                    Stop::Unchecked,
                    format!("bytes at {:#x} do not decode, so the function's jumps cannot be checked", instr.ip()),
                ));
            }
            match instr.flow_control() {
                FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch | FlowControl::Call => {
                    let target = instr.near_branch_target();
                    if inside.contains(&target) {
                        return Err((
                            Stop::JumpInside,
                            format!(
                                "{} at +{:#x} lands at +{:#x}, among the instructions the probe would skip",
                                text(&instr),
                                instr.ip().wrapping_sub(f.address),
                                target - f.address
                            ),
                        ));
                    }
                }
                FlowControl::IndirectBranch => {
                    return Err((
                        Stop::UnreadableJump,
                        format!(
                            "{} at +{:#x} jumps where the code does not say (a jump table could land among the skipped instructions)",
                            text(&instr),
                            instr.ip().wrapping_sub(f.address)
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Where the entry probes of a file's functions can go: the probes bench's census of a
/// distribution's binaries.
#[derive(Clone, Debug, Default)]
pub struct Census {
    /// Functions with a size (`.symtab`, else `.dynsym`; aliases counted once).
    pub functions: usize,
    /// Probed on their first instruction, or after `endbr64` (the rule before placement).
    pub at_start: usize,
    /// Probed after register moves (placement's gain).
    pub past_moves: usize,
    /// The rest, by what stopped the search.
    pub refused: std::collections::BTreeMap<Stop, usize>,
}

/// Places a probe on every function of the ELF file at `path`, as `loupe probe` would (the
/// `.cold` parts are not looked up here: a census of whole libraries errs by at most those).
pub fn census(path: &std::path::Path) -> Result<Census, String> {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let elf = object::File::parse(&*bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut functions: Vec<(u64, u64)> = if elf.symbols().next().is_some() {
        elf.symbols().collect::<Vec<_>>()
    } else {
        elf.dynamic_symbols().collect()
    }
    .into_iter()
    .filter(|s| s.kind() == SymbolKind::Text && !s.is_undefined() && s.size() > 0)
    .map(|s| (s.address(), s.size()))
    .collect();
    functions.sort_unstable();
    functions.dedup_by_key(|f| f.0);
    let mut census = Census::default();
    for (address, size) in functions {
        let Some(code) = elf
            .sections()
            .find(|s| (s.address()..s.address() + s.size()).contains(&address))
            .and_then(|s| s.data_range(address, size).ok().flatten())
        else {
            continue;
        };
        census.functions += 1;
        let long_nops = kernel_emulates_long_nops();
        match place(&FunctionCode { address, code, whole: true, related: Vec::new(), long_nops }) {
            Ok(p) if p.past_moves() => census.past_moves += 1,
            Ok(_) => census.at_start += 1,
            Err(e) => *census.refused.entry(e.stop).or_default() += 1,
        }
    }
    Ok(census)
}

/// An instruction as `objdump` writes it (AT&T).
fn text(instr: &Instruction) -> String {
    let mut out = String::new();
    GasFormatter::new().format(instr, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(code: &[u8]) -> Result<Placement, Unplaceable> {
        place(&FunctionCode { address: 0x1000, code, whole: true, related: Vec::new(), long_nops: true })
    }

    #[test]
    fn push_first_is_probed_at_the_start_and_after_endbr64() {
        assert_eq!(at(&[0x55, 0x48, 0x89, 0xe5, 0xc3]).unwrap(), Placement { offset: 0, skipped: vec![] });
        let cet = at(&[0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0xc3]).unwrap();
        assert_eq!((cet.offset, cet.skipped.as_slice()), (4, &["endbr64".to_string()][..]));
    }

    #[test]
    fn register_moves_are_skipped_up_to_the_first_emulated_instruction() {
        // mov %rdi,%rax; xor %ecx,%ecx; push %rbx; pop %rbx; ret
        let code = [0x48, 0x89, 0xf8, 0x31, 0xc9, 0x53, 0x5b, 0xc3];
        let p = at(&code).unwrap();
        assert_eq!(p.offset, 5);
        assert_eq!(p.skipped, ["mov %rdi,%rax", "xor %ecx,%ecx"]);
        // test %rdi,%rdi; je +1; ret; ret — the conditional jump is emulated.
        assert_eq!(at(&[0x48, 0x85, 0xff, 0x74, 0x01, 0xc3, 0xc3]).unwrap().offset, 3);
    }

    #[test]
    fn what_could_fault_or_move_the_stack_is_refused_with_the_reason() {
        // mov (%rdi),%rax
        let e = at(&[0x48, 0x8b, 0x07, 0x53, 0xc3]).unwrap_err();
        assert!(e.reason.contains("memory"), "{e:?}");
        assert_eq!(e.first, "mov (%rdi),%rax");
        // sub $0x18,%rsp
        let e = at(&[0x48, 0x83, 0xec, 0x18, 0x53, 0xc3]).unwrap_err();
        assert!(e.reason.contains("stack pointer"), "{e:?}");
        // xor %edx,%edx; div %rcx (a divide error needs no memory)
        let e = at(&[0x31, 0xd2, 0x48, 0xf7, 0xf1, 0x53, 0xc3]).unwrap_err();
        assert!(e.reason.contains("div"), "{e:?}");
        // a leaf that never reaches an emulated instruction: mov %rdi,%rax; ret
        let e = at(&[0x48, 0x89, 0xf8, 0xc3]).unwrap_err();
        assert!(e.reason.contains("flow of control"), "{e:?}");
    }

    #[test]
    fn a_jump_into_the_skipped_instructions_is_refused() {
        // 0: mov %edi,%eax  2: add $1,%eax  5: push %rbx  6: cmp $9,%eax  9: jl 2  b: pop %rbx  c: ret
        let code = [0x89, 0xf8, 0x83, 0xc0, 0x01, 0x53, 0x83, 0xf8, 0x09, 0x7c, 0xf7, 0x5b, 0xc3];
        let e = at(&code).unwrap_err();
        assert!(e.reason.contains("lands at +0x2"), "{e:?}");
        // The same loop back to the push itself would run the probe again: refused too.
        let code = [0x89, 0xf8, 0x53, 0x83, 0xf8, 0x09, 0x7c, 0xfa, 0x5b, 0xc3];
        assert!(at(&code).unwrap_err().reason.contains("lands at +0x2"));
        // A loop back to the start is a new call's path through the probe: fine.
        let code = [0x89, 0xf8, 0x53, 0x83, 0xf8, 0x09, 0x7c, 0xf8, 0x5b, 0xc3];
        assert_eq!(at(&code).unwrap().offset, 2);
        // Without the whole function, nothing skipped can be proven.
        let part = FunctionCode { address: 0x1000, code: &code, whole: false, related: Vec::new(), long_nops: true };
        assert!(place(&part).unwrap_err().reason.contains("no size"));
        // A jump from the .cold part counts as much as one from the function itself.
        // At 0x2000: jmp rel32 to 0x1002, the function's push (rel32 counts from 0x2005).
        let mut cold = [0xe9, 0, 0, 0, 0];
        cold[1..].copy_from_slice(&(0x1002u64.wrapping_sub(0x2005) as u32).to_le_bytes());
        let with_cold = FunctionCode {
            address: 0x1000,
            code: &[0x89, 0xf8, 0x53, 0x5b, 0xc3],
            whole: true,
            related: vec![(0x2000, &cold)],
            long_nops: true,
        };
        assert!(place(&with_cold).unwrap_err().reason.contains("lands at +0x2"));
    }

    /// A CET-built loop function as gcc 12 -O2 writes it: `endbr64; mov %rdi,%rax; xor
    /// %ecx,%ecx; nopl 0x0(%rax)` (the loop head's padding), then the loop from +0x10.
    const CET_LOOP: [u8; 25] = [
        0xf3, 0x0f, 0x1e, 0xfa, // endbr64
        0x48, 0x89, 0xf8, // mov %rdi,%rax
        0x31, 0xc9, // xor %ecx,%ecx
        0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00, // nopl 0x0(%rax)
        0x48, 0x89, 0xc2, // +0x10: mov %rax,%rdx
        0x48, 0xff, 0xc1, // inc %rcx
        0x75, 0xf8, // jne +0x10
        0xc3, // ret
    ];

    #[test]
    fn a_multi_byte_nop_is_where_the_probe_goes_on_a_kernel_that_emulates_it() {
        let p = at(&CET_LOOP).unwrap();
        assert_eq!(p.offset, 9);
        assert_eq!(p.skipped, ["endbr64", "mov %rdi,%rax", "xor %ecx,%ecx"]);
        // Each of the kernel's NOPs, 2 to 11 bytes, after a register move.
        for nop in KERNEL_NOPS {
            let mut code = vec![0x48, 0x89, 0xf8];
            code.extend_from_slice(nop);
            code.push(0xc3);
            assert_eq!(at(&code).unwrap().offset, 3, "{nop:02x?}");
        }
        // A NOP the kernel's table does not have (three operand-size prefixes) is skipped as
        // harmless, not probed: here nothing later is emulated, so the search stops at `ret`.
        let odd = [0x48, 0x89, 0xf8, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0x53, 0xc3];
        assert_eq!(at(&odd).unwrap().offset, 15);
    }

    #[test]
    fn a_kernel_that_single_steps_long_nops_is_named_in_the_refusal() {
        let old = FunctionCode { address: 0x1000, code: &CET_LOOP, whole: true, related: Vec::new(), long_nops: false };
        let e = place(&old).unwrap_err();
        // Past the NOP the loop's `jne` is emulated, but it jumps back among the skipped ones.
        assert!(e.reason.contains("lands at +0x10"), "{e:?}");
        assert!(e.reason.contains("nopl (%rax) at +0x9"), "{e:?}");
        assert!(e.reason.contains("this kernel single-steps multi-byte NOPs: Linux 6.16 emulates them"), "{e:?}");
        assert!(!e.reason.contains("reads or writes memory"), "{e:?}");
        assert!(release_at_least("6.18.0-1-amd64\n", (6, 16)));
        assert!(release_at_least("7.0.1", (6, 16)));
        assert!(!release_at_least("6.1.0-28-cloud-amd64", (6, 16)));
        assert!(!release_at_least("garbage", (6, 16)));
    }

    #[test]
    fn an_unreadable_jump_is_refused() {
        // mov %edi,%eax; push %rbx; jmp *%rax
        let e = at(&[0x89, 0xf8, 0x53, 0xff, 0xe0]).unwrap_err();
        assert!(e.reason.contains("jump table"), "{e:?}");
        // With nothing skipped, there is nothing to prove: a push-first function with a jump
        // table is probed at its start as before.
        assert_eq!(at(&[0x53, 0xff, 0xe0]).unwrap().offset, 0);
    }
}
