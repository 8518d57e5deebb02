//! What one row of a table says: how to find the caller's frame from a PC in the row's range,
//! decided from the call-frame information's rules for that range.
//!
//! Only what the kernel program evaluates becomes a [`Rule::Cfa`]; everything else is named
//! ([`Unsupported`]) so a stack that stops there says why rather than guess a wrong caller.

use gimli::{CfaRule, Register, RegisterRule, X86_64};
use loupe_bpf_common::unwind::{
    ROW_CFA_RBP, ROW_CFA_RSP, ROW_INVALID, ROW_PLT, ROW_SIGNAL, ROW_STOP, ROW_UNSUPPORTED, UnwindRow,
};

/// The register a CFA is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Base {
    Rsp,
    Rbp,
}

/// How to unwind one frame from a PC in a row's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// CFA = `base` + `offset`; the return address at CFA − 8; the caller's RBP saved at
    /// CFA + `rbp` (negative), or unchanged when `None`. Offsets are multiples of 8 that fit a
    /// row (CFA up to 512 KiB above its base).
    ///
    /// `i32` fields (what a row's `u16` and `i16` in units of 8 allow): a rule is 16 bytes, not
    /// 32, and a large binary's parse holds one per row.
    Cfa { base: Base, offset: i32, rbp: Option<i32> },
    /// A PLT stub: CFA = RSP + 8 + (((RIP & 15) ≥ `threshold`) ? 8 : 0).
    Plt { threshold: u8 },
    /// A signal trampoline: the interrupted registers are in the signal frame.
    Signal,
    /// The outermost frame: the stack is complete.
    Stop,
    /// No call-frame information covers the address.
    Invalid,
    /// Call-frame information the kernel program does not evaluate.
    Unsupported(Unsupported),
}

/// Why a row's rule is not one the kernel program evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unsupported {
    /// The CFA is based on a register other than RSP or RBP (longjmp, setcontext).
    CfaRegister,
    /// The CFA is a DWARF expression other than the PLT's.
    CfaExpression,
    /// The CFA's offset is not a multiple of 8 or does not fit a row.
    CfaOffset,
    /// The return address is not at CFA − 8.
    ReturnAddress,
    /// RBP is restored some other way than from a slot below the CFA.
    RbpRule,
}

/// The one CFA expression `.plt` sections carry, with the threshold byte (`DW_OP_lit10` or
/// `DW_OP_lit11`) left out: `DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
/// DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus`.
const PLT_BEFORE: [u8; 6] = [0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a];
const PLT_AFTER: [u8; 4] = [0x2a, 0x33, 0x24, 0x22];
const DW_OP_LIT0: u8 = 0x30;

/// Largest CFA offset a row holds (`u16` units of 8 bytes).
const MAX_CFA_OFFSET: i64 = u16::MAX as i64 * 8;

impl Rule {
    /// The rule for one row of call-frame information: its CFA rule (with the expression's
    /// bytes when it is one), and its rules for the return address and RBP (`None`: the
    /// register has no rule).
    pub(crate) fn from_cfi<T: gimli::ReaderOffset>(
        cfa: &CfaRule<T>,
        cfa_expression: Option<&[u8]>,
        ra: Option<RegisterRule<T>>,
        rbp: Option<RegisterRule<T>>,
    ) -> Rule {
        match ra {
            Some(RegisterRule::Undefined) => return Rule::Stop,
            Some(RegisterRule::Offset(-8)) => {}
            _ => return Rule::Unsupported(Unsupported::ReturnAddress),
        }
        let (base, offset) = match cfa {
            CfaRule::RegisterAndOffset { register, offset } => match base_of(*register) {
                Some(base) => (base, *offset),
                None => return Rule::Unsupported(Unsupported::CfaRegister),
            },
            CfaRule::Expression(_) => {
                return match cfa_expression.and_then(plt_threshold) {
                    Some(threshold) => Rule::Plt { threshold },
                    None => Rule::Unsupported(Unsupported::CfaExpression),
                };
            }
        };
        if offset % 8 != 0 || !(0..=MAX_CFA_OFFSET).contains(&offset) {
            return Rule::Unsupported(Unsupported::CfaOffset);
        }
        let rbp = match rbp {
            None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => None,
            Some(RegisterRule::Offset(at)) if at < 0 && at % 8 == 0 && at / 8 >= i16::MIN as i64 => Some(at),
            Some(_) => return Rule::Unsupported(Unsupported::RbpRule),
        };
        // Both checked above to fit: offset ≤ 524,280, rbp ≥ −262,144.
        Rule::Cfa { base, offset: offset as i32, rbp: rbp.map(|at| at as i32) }
    }

    /// This rule as a kernel row starting at `pc` (its low 16 bits are kept).
    pub fn row(&self, pc: u64) -> UnwindRow {
        let (kind, cfa_off8, rbp_off8) = match *self {
            Rule::Cfa { base, offset, rbp } => (
                if base == Base::Rsp { ROW_CFA_RSP } else { ROW_CFA_RBP },
                (offset / 8) as u16,
                rbp.map_or(0, |at| (at / 8) as i16),
            ),
            Rule::Plt { threshold } => (ROW_PLT, threshold as u16, 0),
            Rule::Signal => (ROW_SIGNAL, 0, 0),
            Rule::Stop => (ROW_STOP, 0, 0),
            Rule::Invalid => (ROW_INVALID, 0, 0),
            Rule::Unsupported(_) => (ROW_UNSUPPORTED, 0, 0),
        };
        UnwindRow { pc_low: pc as u16, cfa_off8, rbp_off8, kind, _pad: 0 }
    }

    /// Does a stack that reaches this row end here, complete or not?
    pub fn ends_stack(&self) -> bool {
        matches!(self, Rule::Stop | Rule::Invalid | Rule::Unsupported(_))
    }
}

fn base_of(register: Register) -> Option<Base> {
    match register {
        X86_64::RSP => Some(Base::Rsp),
        X86_64::RBP => Some(Base::Rbp),
        _ => None,
    }
}

/// The PLT expression's threshold (10 or 11), or `None` for any other expression.
fn plt_threshold(expression: &[u8]) -> Option<u8> {
    let [before @ .., lit, a, b, c, d] = expression else { return None };
    let after = [*a, *b, *c, *d];
    let threshold = lit.checked_sub(DW_OP_LIT0)?;
    (before == PLT_BEFORE && after == PLT_AFTER && (threshold == 10 || threshold == 11)).then_some(threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    type R = RegisterRule<usize>;
    const RSP8: CfaRule<usize> = CfaRule::RegisterAndOffset { register: X86_64::RSP, offset: 8 };

    fn ra() -> Option<R> {
        Some(R::Offset(-8))
    }

    #[test]
    fn a_rule_stays_small() {
        // A large binary's parse holds a rule per row: the agent's own table (733,464 rows)
        // peaked at 69 MB with `i64` fields, held twice over as spans and rows.
        assert!(std::mem::size_of::<Rule>() <= 16, "{}", std::mem::size_of::<Rule>());
        assert!(std::mem::size_of::<(u64, Rule)>() <= 24);
    }

    #[test]
    fn the_common_rules_become_rows() {
        let at = |register, offset| CfaRule::RegisterAndOffset { register, offset };
        assert_eq!(
            Rule::from_cfi(&at(X86_64::RSP, 32), None, ra(), Some(R::Offset(-24))),
            Rule::Cfa { base: Base::Rsp, offset: 32, rbp: Some(-24) }
        );
        assert_eq!(
            Rule::from_cfi(&at(X86_64::RBP, 16), None, ra(), Some(R::Offset(-16))),
            Rule::Cfa { base: Base::Rbp, offset: 16, rbp: Some(-16) }
        );
        assert_eq!(Rule::from_cfi(&RSP8, None, ra(), None), Rule::Cfa { base: Base::Rsp, offset: 8, rbp: None });
        let row = Rule::Cfa { base: Base::Rbp, offset: 16, rbp: Some(-16) }.row(0x1_2345);
        assert_eq!((row.pc_low, row.kind, row.cfa_off8, row.rbp_off8), (0x2345, ROW_CFA_RBP, 2, -2));
    }

    #[test]
    fn what_the_kernel_cannot_evaluate_is_named() {
        assert_eq!(Rule::from_cfi(&RSP8, None, Some(R::Undefined), None), Rule::Stop);
        assert_eq!(Rule::from_cfi(&RSP8, None, None, None), Rule::Unsupported(Unsupported::ReturnAddress));
        assert_eq!(
            Rule::from_cfi(&RSP8, None, Some(R::Offset(-16)), None),
            Rule::Unsupported(Unsupported::ReturnAddress)
        );
        let rdi = CfaRule::RegisterAndOffset { register: X86_64::RDI, offset: 8 };
        assert_eq!(Rule::from_cfi(&rdi, None, ra(), None), Rule::Unsupported(Unsupported::CfaRegister));
        let odd = CfaRule::RegisterAndOffset { register: X86_64::RSP, offset: 12 };
        assert_eq!(Rule::from_cfi(&odd, None, ra(), None), Rule::Unsupported(Unsupported::CfaOffset));
        let huge = CfaRule::RegisterAndOffset { register: X86_64::RSP, offset: MAX_CFA_OFFSET + 8 };
        assert_eq!(Rule::from_cfi(&huge, None, ra(), None), Rule::Unsupported(Unsupported::CfaOffset));
        assert_eq!(
            Rule::from_cfi(&RSP8, None, ra(), Some(R::Register(X86_64::RBX))),
            Rule::Unsupported(Unsupported::RbpRule)
        );
    }

    #[test]
    fn only_the_plt_expression_is_evaluated() {
        let expr = CfaRule::Expression(gimli::UnwindExpression { offset: 0, length: 0 });
        let plt = |lit: u8| [&PLT_BEFORE[..], &[DW_OP_LIT0 + lit], &PLT_AFTER[..]].concat();
        assert_eq!(Rule::from_cfi(&expr, Some(&plt(11)), ra(), None), Rule::Plt { threshold: 11 });
        assert_eq!(Rule::from_cfi(&expr, Some(&plt(10)), ra(), None), Rule::Plt { threshold: 10 });
        assert_eq!(Rule::from_cfi(&expr, Some(&plt(9)), ra(), None), Rule::Unsupported(Unsupported::CfaExpression));
        // DW_OP_breg7 (rsp) 160; DW_OP_deref: a signal frame's CFA, not a PLT.
        assert_eq!(
            Rule::from_cfi(&expr, Some(&[0x77, 0xa0, 0x01, 0x06]), ra(), None),
            Rule::Unsupported(Unsupported::CfaExpression)
        );
        assert_eq!(Rule::from_cfi(&expr, Some(&[]), ra(), None), Rule::Unsupported(Unsupported::CfaExpression));
    }
}
