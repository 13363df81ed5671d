//! Method bodies: hand-written bodies for every operand kind and opcode, exception clauses,
//! the format switches an edit causes (tiny → fat, short → long, small → fat clauses), max-stack
//! computation, and generated bodies for decode/encode identity and edit consistency.

use corprof_sig::il::*;
use corprof_sig::sig::{CallConv, MethodSig, Token, Type};

/// A fat header: flags word (size nibble 3, fat format, and `flags`), max stack, code size,
/// local signature token; then the code.
fn fat(flags: u16, max_stack: u16, locals: u32, code: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(0x3003u16 | flags).to_le_bytes());
    out.extend_from_slice(&max_stack.to_le_bytes());
    out.extend_from_slice(&(code.len() as u32).to_le_bytes());
    out.extend_from_slice(&locals.to_le_bytes());
    out.extend_from_slice(code);
    out
}

/// Pads to 4 and appends a small EH section with `clauses` (flags, try offset, try length,
/// handler offset, handler length, token).
fn small_eh(body: &mut Vec<u8>, clauses: &[(u16, u16, u8, u16, u8, u32)]) {
    body.resize((body.len() + 3) & !3, 0);
    body.extend_from_slice(&[0x01, (4 + 12 * clauses.len()) as u8, 0, 0]);
    for &(f, to, tl, ho, hl, t) in clauses {
        body.extend_from_slice(&f.to_le_bytes());
        body.extend_from_slice(&to.to_le_bytes());
        body.push(tl);
        body.extend_from_slice(&ho.to_le_bytes());
        body.push(hl);
        body.extend_from_slice(&t.to_le_bytes());
    }
}

/// The clauses' six fields as offsets, read back from encoded bytes.
fn clause_offsets(bytes: &[u8]) -> Vec<[u32; 6]> {
    let body = MethodBody::parse(bytes).unwrap();
    let offsets: std::collections::HashMap<Label, u32> = body.offsets().unwrap().into_iter().collect();
    body.clauses()
        .iter()
        .map(|c| {
            let (kind, token) = match c.kind {
                ClauseKind::Catch(t) => (0, t.0),
                ClauseKind::Filter(l) => (1, offsets[&l]),
                ClauseKind::Finally => (2, 0),
                ClauseKind::Fault => (4, 0),
            };
            let o = |l: Label| offsets[&l];
            [
                kind,
                o(c.try_start),
                o(c.try_end) - o(c.try_start),
                o(c.handler_start),
                o(c.handler_end) - o(c.handler_start),
                token,
            ]
        })
        .collect()
}

/// How many bytes the method body at the start of `bytes` occupies, read from the headers alone
/// (ECMA-335 II.25.4), independently of corprof's parser: the header and code, then each extra
/// data section, 4-aligned, while the previous one says more follow. `None` when the headers
/// point past `bytes`.
fn body_extent(bytes: &[u8]) -> Option<usize> {
    let first = *bytes.first()?;
    if first & 0x3 == 0x2 {
        return Some(1 + usize::from(first >> 2));
    }
    let flags = u16::from_le_bytes([first, *bytes.get(1)?]);
    let code_size = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?) as usize;
    let mut end = usize::from(flags >> 12) * 4 + code_size;
    let mut more = flags & 0x8 != 0;
    while more {
        end = (end + 3) & !3;
        let kind = *bytes.get(end)?;
        let size = if kind & 0x40 != 0 {
            let s = bytes.get(end + 1..end + 4)?;
            usize::from(s[0]) | usize::from(s[1]) << 8 | usize::from(s[2]) << 16
        } else {
            usize::from(*bytes.get(end + 1)?)
        };
        end += size;
        more = kind & 0x80 != 0;
    }
    (end <= bytes.len()).then_some(end)
}

#[test]
fn body_extents_are_read_from_the_headers() {
    assert_eq!(body_extent(&[0x0a, 0x2a, 0x2a, 0xff]), Some(3), "tiny: 2 code bytes");
    let mut b = fat(0x8, 8, 0, &[0x00, 0x2a, 0x2a]);
    small_eh(&mut b, &[(0, 0, 1, 1, 1, 0x0100_0001)]);
    let n = b.len();
    b.extend_from_slice(&[0xee; 8]);
    assert_eq!(body_extent(&b), Some(n), "fat, padded, one small clause section");
    assert_eq!(body_extent(&b[..n - 1]), None);
}

fn ops(body: &MethodBody) -> Vec<OpCode> {
    body.iter().map(|(_, i)| i.opcode).collect()
}

fn identity(bytes: &[u8]) -> MethodBody {
    let body = MethodBody::parse(bytes).unwrap_or_else(|e| panic!("{e}: {bytes:02x?}"));
    assert_eq!(body.encode().unwrap(), bytes, "decode → encode");
    body
}

#[test]
fn every_operand_kind() {
    #[rustfmt::skip]
    let code = [
        0x00,                                     // nop                InlineNone
        0x1f, 0xfb,                               // ldc.i4.s -5        ShortInlineI
        0x20, 0x78, 0x56, 0x34, 0x12,             // ldc.i4 0x12345678  InlineI
        0x21, 1, 2, 3, 4, 5, 6, 7, 0x88,          // ldc.i8             InlineI8
        0x22, 0x00, 0x00, 0xc0, 0x3f,             // ldc.r4 1.5         ShortInlineR
        0x23, 0, 0, 0, 0, 0, 0, 0x04, 0xc0,       // ldc.r8 -2.5        InlineR
        0x26, 0x26, 0x26, 0x26,                   // pop ×4
        0x38, 0x00, 0x00, 0x00, 0x00,             // br +0              InlineBrTarget
        0x2b, 0x00,                               // br.s +0            ShortInlineBrTarget
        0x02,                                     // ldarg.0
        0x45, 0x02, 0, 0, 0, 0xf2, 0xff, 0xff, 0xff, 0x00, 0, 0, 0, // switch (-14, 0) InlineSwitch
        0xd0, 0x01, 0x00, 0x00, 0x02,             // ldtoken TypeDef#1  InlineTok
        0x8c, 0x02, 0x00, 0x00, 0x01,             // box TypeRef#2      InlineType
        0x28, 0x03, 0x00, 0x00, 0x0a,             // call MemberRef#3   InlineMethod
        0x7b, 0x04, 0x00, 0x00, 0x04,             // ldfld Field#4      InlineField
        0x72, 0x05, 0x00, 0x00, 0x70,             // ldstr String#5     InlineString
        0x29, 0x06, 0x00, 0x00, 0x11,             // calli Sig#6        InlineSig
        0xfe, 0x09, 0x34, 0x12,                   // ldarg 0x1234       InlineVar
        0x0e, 0xff,                               // ldarg.s 255        ShortInlineVar
        0xfe, 0x01,                               // ceq
        0xfe, 0x12, 0x02,                         // unaligned. 2
        0xfe, 0x13,                               // volatile.
        0xfe, 0x14,                               // tail.
        0xfe, 0x16, 0x07, 0x00, 0x00, 0x1b,       // constrained. TypeSpec#7
        0xfe, 0x19, 0x01,                         // no. 1
        0xfe, 0x1e,                               // readonly.
        0x2a,                                     // ret
    ];
    let body = identity(&fat(0x10, 6, 0x1100_0001, &code));
    let l: Vec<Label> = body.labels().collect();
    let operands: Vec<&Operand> = body.iter().map(|(_, i)| &i.operand).collect();
    assert_eq!(operands[1], &Operand::I8(-5));
    assert_eq!(operands[2], &Operand::I32(0x1234_5678));
    assert_eq!(operands[3], &Operand::I64(i64::from_le_bytes([1, 2, 3, 4, 5, 6, 7, 0x88])));
    assert_eq!(operands[4], &Operand::F32(1.5));
    assert_eq!(operands[5], &Operand::F64(-2.5));
    assert_eq!(operands[10], &Operand::Branch(l[11]));
    assert_eq!(operands[11], &Operand::Branch(l[12]));
    assert_eq!(operands[13], &Operand::Switch(vec![l[12], l[14]]));
    assert_eq!(operands[14], &Operand::Token(Token(0x0200_0001)));
    assert_eq!(operands[19], &Operand::Token(Token(0x1100_0006)));
    assert_eq!(operands[20], &Operand::Var(0x1234));
    assert_eq!(operands[21], &Operand::Var(255));
    assert_eq!(operands[23], &Operand::I8(2));
    assert_eq!(
        ops(&body)[22..],
        [
            OpCode::CEQ,
            OpCode::UNALIGNED,
            OpCode::VOLATILE,
            OpCode::TAIL,
            OpCode::CONSTRAINED,
            OpCode::NO,
            OpCode::READONLY,
            OpCode::RET
        ]
    );
    assert_eq!((body.max_stack(), body.local_var_sig(), body.init_locals()), (6, Some(Token(0x1100_0001)), true));
}

/// An operand of the kind `op` takes, and its bytes.
fn sample_operand(op: OpCode) -> (Operand, Vec<u8>) {
    match op.operand_kind() {
        OperandKind::InlineNone => (Operand::None, vec![]),
        OperandKind::ShortInlineI => (Operand::I8(-2), vec![0xfe]),
        OperandKind::InlineI => (Operand::I32(-3), (-3i32).to_le_bytes().to_vec()),
        OperandKind::InlineI8 => (Operand::I64(-4), (-4i64).to_le_bytes().to_vec()),
        OperandKind::ShortInlineR => (Operand::F32(0.5), 0.5f32.to_le_bytes().to_vec()),
        OperandKind::InlineR => (Operand::F64(0.25), 0.25f64.to_le_bytes().to_vec()),
        OperandKind::InlineVar => (Operand::Var(300), 300u16.to_le_bytes().to_vec()),
        OperandKind::ShortInlineVar => (Operand::Var(7), vec![7]),
        OperandKind::InlineBrTarget | OperandKind::ShortInlineBrTarget | OperandKind::InlineSwitch => unreachable!(),
        _ => (Operand::Token(Token(0x0a00_0009)), vec![0x09, 0, 0, 0x0a]),
    }
}

#[test]
fn every_opcode_reads_and_writes() {
    let mut seen = 0;
    for op in OpCode::all() {
        let mut code = if op.size() == 2 { vec![0xfe, op.value() as u8] } else { vec![op.value() as u8] };
        let operand = match op.operand_kind() {
            // branch to the final ret
            OperandKind::ShortInlineBrTarget => {
                code.push(0);
                None
            }
            OperandKind::InlineBrTarget => {
                code.extend_from_slice(&[0, 0, 0, 0]);
                None
            }
            OperandKind::InlineSwitch => {
                code.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
                None
            }
            _ => {
                let (operand, bytes) = sample_operand(op);
                code.extend_from_slice(&bytes);
                Some(operand)
            }
        };
        code.push(0x2a);
        let bytes = fat(0, 8, 0, &code);
        let body = identity(&bytes);
        let (first, ins) = body.iter().next().unwrap();
        assert_eq!(ins.opcode, op);
        assert_eq!(
            op.size() + op.operand_kind().size() + usize::from(op == OpCode::SWITCH) * 4,
            code.len() - 1,
            "{op}"
        );
        match operand {
            Some(o) => assert_eq!(ins.operand, o, "{op}"),
            None => assert_eq!(ins.targets(), [body.labels().nth(1).unwrap()], "{op}"),
        }
        assert_ne!(first, Label::END);
        seen += 1;
    }
    assert_eq!(seen, 219);
    // 0x24, 0x77, 0xfe08 and friends are no opcodes
    for bad in [0x24u8, 0x77, 0xa6, 0xbb, 0xe1, 0xff] {
        assert_eq!(
            MethodBody::parse(&[0x06, bad]).unwrap_err(),
            IlError { offset: 1, kind: IlErrorKind::BadOpcode(bad.into()) }
        );
    }
    assert_eq!(MethodBody::parse(&[0x0a, 0xfe, 0x08]).unwrap_err().kind, IlErrorKind::BadOpcode(0xfe08));
}

/// try { try { A } catch { B } } finally { C }; then two adjacent try/fault blocks.
fn nested_and_adjacent() -> Vec<u8> {
    #[rustfmt::skip]
    let code = [
        0x00,             // 0  nop            inner try
        0xde, 0x04,       // 1  leave.s 7
        0x26,             // 3  pop            inner catch
        0xde, 0x01,       // 4  leave.s 7
        0x00,             // 6  nop
        0xde, 0x02,       // 7  leave.s 11     (end of outer try)
        0x00,             // 9  nop            finally
        0xdc,             // 10 endfinally
        0x00,             // 11 nop            try 1
        0xde, 0x02,       // 12 leave.s 16
        0xdc,             // 14 endfinally     fault 1 (adjacent to try 2)
        0x00,             // 15 nop            try 2
        0x2a,             // 16 ret / fault 2 region is [16,17)
    ];
    let mut bytes = fat(0x8, 2, 0, &code);
    small_eh(
        &mut bytes,
        &[
            (0, 0, 3, 3, 4, 0x0100_0001), // inner catch
            (2, 0, 9, 9, 2, 0),           // outer finally
            (4, 11, 3, 14, 1, 0),         // fault 1
            (4, 15, 1, 16, 1, 0),         // fault 2, handler to the end
        ],
    );
    bytes
}

#[test]
fn nested_and_adjacent_clauses() {
    let bytes = nested_and_adjacent();
    let mut body = identity(&bytes);
    let l: Vec<Label> = body.labels().collect();
    let c = body.clauses();
    assert_eq!(c.len(), 4);
    assert_eq!(c[0], Clause::new(ClauseKind::Catch(Token(0x0100_0001)), l[0], l[2], l[2], l[5]));
    assert_eq!((c[1].kind, c[1].try_start, c[1].try_end, c[1].handler_end), (ClauseKind::Finally, l[0], l[6], l[8]));
    assert_eq!((c[3].handler_start, c[3].handler_end), (l[12], Label::END));
    // Insert two nops into the inner try: both try ranges, every later offset and the leave
    // targets move by two.
    body.insert_before(l[1], [Instruction::simple(OpCode::NOP), Instruction::simple(OpCode::NOP)]).unwrap();
    let edited = body.encode().unwrap();
    assert_eq!(
        clause_offsets(&edited),
        [[0, 0, 5, 5, 4, 0x0100_0001], [2, 0, 11, 11, 2, 0], [4, 13, 3, 16, 1, 0], [4, 17, 1, 18, 1, 0]]
    );
    let again = MethodBody::parse(&edited).unwrap();
    assert_eq!(again.encode().unwrap(), edited);
    let offsets = again.offsets().unwrap();
    let target = |i: usize| match again.iter().nth(i).unwrap().1.operand {
        Operand::Branch(t) => offsets.iter().find(|(l, _)| *l == t).unwrap().1,
        _ => panic!(),
    };
    assert_eq!((target(3), target(5), target(7)), (9, 9, 13));
}

#[test]
fn removing_and_replacing_keep_references() {
    let mut body = MethodBody::parse(&nested_and_adjacent()).unwrap();
    let l: Vec<Label> = body.labels().collect();
    // Remove the inner try's first instruction: the try and the outer try now start at the leave.
    assert_eq!(body.remove(l[0]).unwrap(), Instruction::simple(OpCode::NOP));
    assert_eq!((body.clauses()[0].try_start, body.clauses()[1].try_start), (l[1], l[1]));
    // Replace the leave with three instructions: the first keeps the label.
    let rest = body
        .replace(
            l[1],
            [
                Instruction::simple(OpCode::NOP),
                Instruction::simple(OpCode::NOP),
                Instruction::branch(OpCode::LEAVE_S, l[6]),
            ],
        )
        .unwrap();
    assert_eq!(rest.len(), 2);
    assert_eq!(body.get(l[1]), Some(&Instruction::simple(OpCode::NOP)));
    assert_eq!(clause_offsets(&body.encode().unwrap())[0], [0, 0, 4, 4, 4, 0x0100_0001]);
    // Removing the last instruction moves a range ending at it to END.
    let last = body.labels().last().unwrap();
    body.remove(last).unwrap();
    assert_eq!(body.clauses()[3].handler_start, Label::END);
    assert_eq!(body.remove(last).unwrap_err().kind, IlErrorKind::UnknownLabel(last));
}

/// Labels print as `L` and their number, the end of the code as `END` (as errors and clause
/// dumps show them).
#[test]
fn labels_print_as_their_number_and_the_end_as_end() {
    let body = MethodBody::parse(&[0x0a, 0x00, 0x2a]).unwrap();
    let printed: Vec<String> = body.labels().map(|l| format!("{l:?}")).collect();
    assert_eq!(printed.len(), 2);
    assert!(printed.iter().all(|p| p.starts_with('L') && p[1..].parse::<u32>().is_ok()), "{printed:?}");
    assert_ne!(printed[0], printed[1]);
    assert_eq!(format!("{:?}", Label::END), "END");
}

#[test]
fn an_edit_makes_a_tiny_header_fat() {
    // 63 nops and ret: the largest tiny body.
    let mut code = vec![0x00; 62];
    code.push(0x2a);
    let mut bytes = vec![(63 << 2) | 2];
    bytes.extend_from_slice(&code);
    let mut body = identity(&bytes);
    assert!(!body.is_fat());
    let first = body.labels().next().unwrap();
    body.insert_before(first, [Instruction::simple(OpCode::NOP)]).unwrap();
    let out = body.encode().unwrap();
    let mut expected = fat(0, 8, 0, &[0x00; 63]);
    expected.push(0x2a);
    expected[4] = 64; // code size
    assert_eq!(out, expected);
    // Removing it again goes back to tiny only if the header was tiny: it still is.
    let nop = body.labels().next().unwrap();
    body.remove(nop).unwrap();
    assert_eq!(body.encode().unwrap(), bytes);
    // Locals make it fat, with InitLocals.
    body.set_local_var_sig(Token(0x1100_0002));
    let out = body.encode().unwrap();
    assert_eq!(out, fat(0x10, 8, 0x1100_0002, &code));
    // A max stack above 8 too.
    let mut body = MethodBody::parse(&[0x06, 0x2a]).unwrap();
    body.set_max_stack(9);
    assert_eq!(body.encode().unwrap(), fat(0, 9, 0, &[0x2a]));
}

#[test]
fn an_edit_makes_a_short_branch_long() {
    // br.s over 125 nops to ret: displacement 125 fits.
    let mut code = vec![0x2b, 125];
    code.extend(std::iter::repeat_n(0x00, 125));
    code.push(0x2a);
    let bytes = fat(0, 1, 0, &code);
    let mut body = identity(&bytes);
    let l: Vec<Label> = body.labels().collect();
    // Two more nops between: 127 fits still.
    body.insert_before(l[1], [Instruction::simple(OpCode::NOP), Instruction::simple(OpCode::NOP)]).unwrap();
    let out = body.encode().unwrap();
    assert_eq!(&out[12..14], [0x2b, 127]);
    // One more: 128 needs br.
    body.insert_before(l[1], [Instruction::simple(OpCode::NOP)]).unwrap();
    let out = body.encode().unwrap();
    assert_eq!(&out[12..17], [0x38, 128, 0, 0, 0]);
    let back = MethodBody::parse(&out).unwrap();
    assert_eq!(ops(&back)[0], OpCode::BR);
    assert_eq!(back.len(), body.len());
    // Backward: a br.s at the end jumping back over 200 bytes becomes br too.
    let mut body = MethodBody::parse(&[0x06, 0x2a]).unwrap();
    let ret = body.labels().next().unwrap();
    let nops: Vec<_> = (0..200).map(|_| Instruction::simple(OpCode::NOP)).collect();
    body.insert_after(ret, nops).unwrap();
    body.push(Instruction::branch(OpCode::BR_S, ret));
    let out = body.encode().unwrap();
    assert_eq!(&out[12 + 201..], [0x38, 0x32, 0xff, 0xff, 0xff]); // -(201 + 5)
}

#[test]
fn a_body_of_short_branches_alone_widens_those_out_of_reach() {
    // Seventy `br.s` back to the first: the 65th (at 128, displacement -130) and on need `br`,
    // though no instruction but branches tells the layout that any short branch is there.
    let mut body = MethodBody::parse(&[(2 << 2) | 2, 0x2b, 0xfe]).unwrap();
    let first = body.labels().next().unwrap();
    for _ in 1..70 {
        body.push(Instruction::branch(OpCode::BR_S, first));
    }
    let out = body.encode().unwrap();
    let back = MethodBody::parse(&out).unwrap();
    let ops = ops(&back);
    assert_eq!(ops.len(), 70);
    assert!(ops[..64].iter().all(|&o| o == OpCode::BR_S), "{ops:?}");
    assert!(ops[64..].iter().all(|&o| o == OpCode::BR), "{ops:?}");
    let start = back.labels().next().unwrap();
    assert!(back.iter().all(|(_, i)| i.operand == Operand::Branch(start)));
}

#[test]
fn compact_makes_long_branches_short_and_fat_headers_tiny() {
    // fat, InitLocals without locals: br over a nop; leave to the ret.
    let code = [0x38, 0x01, 0, 0, 0, 0x00, 0xdd, 0x00, 0, 0, 0, 0x2a];
    let mut body = identity(&fat(0x10, 2, 0, &code));
    body.compact().unwrap();
    assert_eq!(body.encode().unwrap(), [(6 << 2) | 2, 0x2b, 0x01, 0x00, 0xde, 0x00, 0x2a]);
    // A branch out of short reach stays long; locals keep the header fat.
    let mut code = vec![0x38, 200, 0, 0, 0];
    code.extend(std::iter::repeat_n(0x00, 200));
    code.push(0x2a);
    let bytes = fat(0, 8, 0x1100_0001, &code);
    let mut body = identity(&bytes);
    body.compact().unwrap();
    assert_eq!(body.encode().unwrap(), bytes);
}

/// The header's accessors and setters: a tiny header has no flags, locals or InitLocals; giving
/// it locals or InitLocals makes it fat with exactly the flags written; on a fat header each
/// setter changes its own bit alone, the others (an unknown one among them) kept.
#[test]
fn header_flags_and_locals_are_read_and_set_exactly() {
    let flags_of = |b: &MethodBody| {
        let bytes = b.encode().unwrap();
        (u16::from_le_bytes([bytes[0], bytes[1]]), u32::from_le_bytes(bytes[8..12].try_into().unwrap()))
    };
    // nop; nop; ret
    let tiny = identity(&[0x0e, 0x00, 0x00, 0x2a]);
    assert_eq!((tiny.len(), tiny.is_empty()), (3, false));
    assert!(!tiny.is_fat() && !tiny.init_locals());
    assert_eq!((tiny.fat_flags(), tiny.local_var_sig()), (None, None));

    let mut b = tiny.clone();
    b.set_init_locals(true);
    assert!(b.is_fat() && b.init_locals());
    assert_eq!(b.fat_flags(), Some(0x3013));
    assert_eq!(flags_of(&b), (0x3013, 0));
    b.set_init_locals(true);
    assert_eq!(b.fat_flags(), Some(0x3013), "set twice stays set");
    b.set_init_locals(false);
    assert!(!b.init_locals());
    assert_eq!(flags_of(&b), (0x3003, 0));
    let mut b = tiny.clone();
    b.set_init_locals(false);
    assert_eq!(flags_of(&b), (0x3003, 0));

    let mut b = tiny.clone();
    b.set_local_var_sig(Token::new(0x11, 7));
    assert_eq!((b.fat_flags(), b.local_var_sig()), (Some(0x3013), Some(Token::new(0x11, 7))));
    assert_eq!(flags_of(&b), (0x3013, 0x1100_0007));

    // Fat, with an unknown flag (0x20) and no InitLocals.
    let mut b = identity(&fat(0x20, 2, 0, &[0x00, 0x2a]));
    assert_eq!((b.fat_flags(), b.init_locals(), b.local_var_sig()), (Some(0x3023), false, None));
    b.set_local_var_sig(Token::new(0x11, 1));
    assert_eq!((b.fat_flags(), b.init_locals()), (Some(0x3023), false));
    b.set_init_locals(true);
    assert_eq!(flags_of(&b), (0x3033, 0x1100_0001));
    b.set_init_locals(false);
    assert_eq!(flags_of(&b), (0x3023, 0x1100_0001));
}

/// A body with a data section that is not an exception table keeps it, and the flag saying
/// another section follows, through decoding, encoding and `compact` (which would otherwise
/// make this small body's header tiny, and a tiny header has no sections).
#[test]
fn a_data_section_before_the_exception_table_is_kept() {
    // try { nop; leave END } finally { endfinally } ret
    let code = [0x00, 0xde, 0x01, 0xdc, 0x2a];
    let mut bytes = fat(0x08, 8, 0, &code);
    bytes.resize((bytes.len() + 3) & !3, 0);
    // An OptIL section (kind 0x02) with MoreSects, 8 bytes, then the small EH table.
    bytes.extend_from_slice(&[0x82, 8, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd]);
    small_eh(&mut bytes, &[(2, 0, 3, 3, 1, 0)]);
    let mut body = identity(&bytes);
    assert_eq!(body.clauses().len(), 1);
    body.compact().unwrap();
    assert!(body.is_fat());
    assert_eq!(body.encode().unwrap(), bytes);
    // A plain small body compacts to a tiny header; the same body with a data section stays fat.
    let plain = fat(0, 8, 0, &[0x00, 0x2a]);
    let mut body = identity(&plain);
    body.compact().unwrap();
    assert!(!body.is_fat());
    let mut with_data = fat(0x08, 8, 0, &[0x00, 0x2a]);
    with_data.resize((with_data.len() + 3) & !3, 0);
    with_data.extend_from_slice(&[0x02, 4, 0, 0]);
    let mut body = identity(&with_data);
    body.compact().unwrap();
    assert!(body.is_fat(), "a tiny header would lose the data section");
    assert_eq!(body.encode().unwrap(), with_data);
}

/// Sections whose sizes are not multiples of four, followed by another section, keep their
/// padding; an EH section with no clause is a section; a clause added is written where the read
/// EH section was (after a data section), in the small format while its clauses fit it.
#[test]
fn sections_keep_their_padding_order_and_format() {
    // try { nop; leave END } finally { endfinally } ret
    let code = [0x00, 0xde, 0x01, 0xdc, 0x2a];
    let start = |flags| {
        let mut b = fat(flags, 8, 0, &code);
        b.resize((b.len() + 3) & !3, 0);
        b
    };
    // A data section of 5 bytes with MoreSects, 3 bytes of padding, then the EH table.
    let mut bytes = start(0x08);
    bytes.extend_from_slice(&[0x82, 5, 0, 0, 0xee, 0x55, 0x55, 0x55]);
    small_eh(&mut bytes, &[(2, 0, 3, 3, 1, 0)]);
    let body = identity(&bytes);
    assert_eq!(body.clauses().len(), 1);
    // The EH table first, with one byte past its clause and MoreSects, then the data section.
    let mut bytes = start(0x08);
    bytes.extend_from_slice(&[0x81, 17]);
    bytes.extend_from_slice(&[0, 0, 2, 0, 0, 0, 3, 3, 0, 1, 0, 0, 0, 0, 0x77, 0x66, 0x66, 0x66]);
    bytes.extend_from_slice(&[0x02, 4, 0, 0]);
    let body = identity(&bytes);
    assert_eq!(body.clauses().len(), 1);
    // An EH table of no clause.
    let mut bytes = start(0x08);
    bytes.extend_from_slice(&[0x01, 4, 0, 0]);
    let body = identity(&bytes);
    assert!(body.clauses().is_empty());
    // An EH table whose kind has another bit (OptILTable) too: kept as read.
    let mut bytes = start(0x08);
    small_eh(&mut bytes, &[(2, 0, 3, 3, 1, 0)]);
    bytes[20] = 0x03;
    assert_eq!(identity(&bytes).clauses().len(), 1);

    // A second clause (the same finally, again) added to a body whose data section comes first:
    // the table is written again after it, small; with 21 clauses, fat.
    let mut bytes = start(0x08);
    bytes.extend_from_slice(&[0x82, 8, 0, 0, 1, 2, 3, 4]);
    small_eh(&mut bytes, &[(2, 0, 3, 3, 1, 0)]);
    let data_at = bytes.len() - 16 - 8;
    for (clauses, kind) in [(2, 0x01), (21, 0x41)] {
        let mut body = identity(&bytes);
        let c = body.clauses()[0];
        for _ in 1..clauses {
            body.clauses_mut().push(c);
        }
        let out = body.encode().unwrap();
        assert_eq!(out[..data_at + 8], bytes[..data_at + 8], "{clauses}: the header, code and data section as read");
        assert_eq!(out[data_at + 8], kind, "{clauses}: the EH table's format");
        assert_eq!(MethodBody::parse(&out).unwrap().clauses().len(), clauses);
    }
}

/// A clause whose try or handler ends before it starts is refused when writing.
#[test]
fn a_clause_ending_before_it_starts_is_refused() {
    let code = [0x00, 0xde, 0x01, 0xdc, 0x2a];
    let mut bytes = fat(0x08, 8, 0, &code);
    bytes.resize((bytes.len() + 3) & !3, 0);
    small_eh(&mut bytes, &[(2, 0, 3, 3, 1, 0)]);
    for swap_try in [true, false] {
        let mut body = identity(&bytes);
        let c = &mut body.clauses_mut()[0];
        if swap_try {
            std::mem::swap(&mut c.try_start, &mut c.try_end);
        } else {
            std::mem::swap(&mut c.handler_start, &mut c.handler_end);
        }
        let e = body.encode().unwrap_err();
        assert_eq!((e.offset, e.kind), (0, IlErrorKind::BadClause), "try swapped: {swap_try}");
    }
}

/// `compact` makes a header tiny only when nothing needs it fat: each reason alone keeps it.
#[test]
fn compact_keeps_a_fat_header_for_each_reason_alone() {
    let tiny_after = |bytes: &[u8]| {
        let mut body = identity(bytes);
        body.compact().unwrap();
        !body.is_fat()
    };
    let nops = |n: usize| {
        let mut code = vec![0x00; n - 1];
        code.push(0x2a);
        code
    };
    assert!(tiny_after(&fat(0, 8, 0, &nops(63))), "63 bytes, 8 stack, nothing else");
    assert!(tiny_after(&fat(0x10, 8, 0, &nops(63))), "InitLocals without locals");
    assert!(!tiny_after(&fat(0, 8, 0, &nops(64))), "64 bytes of code");
    assert!(!tiny_after(&fat(0, 9, 0, &nops(2))), "a max stack of 9");
    assert!(!tiny_after(&fat(0, 8, 0x1100_0001, &nops(2))), "locals");
    assert!(!tiny_after(&fat(0x20, 8, 0, &nops(2))), "an unknown flag");
    let code = [0x00, 0xde, 0x01, 0xdc, 0x2a];
    let mut with_clause = fat(0x08, 8, 0, &code);
    with_clause.resize((with_clause.len() + 3) & !3, 0);
    small_eh(&mut with_clause, &[(2, 0, 3, 3, 1, 0)]);
    assert!(!tiny_after(&with_clause), "a clause");
}

/// Errors reading an operand, or a switch whose count runs past the code, name byte offsets in
/// the body (the header's length included).
#[test]
fn operand_errors_name_their_offset_in_the_body() {
    // ldc.i4 with one byte of its four: tiny (header 1 byte), fat (12 bytes).
    let e = MethodBody::parse(&[0x0a, 0x20, 0x01]).unwrap_err();
    assert_eq!((e.offset, e.kind.clone()), (2, IlErrorKind::UnexpectedEnd));
    let e = MethodBody::parse(&fat(0, 8, 0, &[0x00, 0x20, 0x01])).unwrap_err();
    assert_eq!((e.offset, e.kind.clone()), (14, IlErrorKind::UnexpectedEnd));
    // switch (2 targets) with room for one and a byte: refused at the code's end, before the
    // targets are read.
    let code = [0x45, 2, 0, 0, 0, 0, 0, 0, 0, 0];
    let e = MethodBody::parse(&fat(0, 8, 0, &code)).unwrap_err();
    assert_eq!((e.offset, e.kind.clone()), (12 + code.len(), IlErrorKind::UnexpectedEnd));
}

#[test]
fn a_switch_with_many_targets() {
    let n = 300u32;
    let mut code = vec![0x16, 0x45];
    code.extend_from_slice(&n.to_le_bytes());
    // target i → the i-th nop after the switch
    for i in 0..n {
        code.extend_from_slice(&i.to_le_bytes());
    }
    code.extend(std::iter::repeat_n(0x00, n as usize));
    code.push(0x2a);
    let bytes = fat(0, 1, 0, &code);
    let mut body = identity(&bytes);
    let l: Vec<Label> = body.labels().collect();
    assert_eq!(body.get(l[1]).unwrap().targets(), &l[2..2 + n as usize]);
    // Remove the first nop: target 0 now names the second nop, at the same offset.
    body.remove(l[2]).unwrap();
    let out = body.encode().unwrap();
    let back = MethodBody::parse(&out).unwrap();
    let bl: Vec<Label> = back.labels().collect();
    let targets = back.get(bl[1]).unwrap().targets();
    assert_eq!((targets[0], targets[1], targets[299]), (bl[2], bl[2], bl[300]));
}

#[test]
fn clause_sections_widen_when_offsets_outgrow_them() {
    let mut body = MethodBody::parse(&nested_and_adjacent()).unwrap();
    let l: Vec<Label> = body.labels().collect();
    let nops: Vec<_> = (0..300).map(|_| Instruction::simple(OpCode::NOP)).collect();
    body.insert_before(l[1], nops).unwrap();
    let out = body.encode().unwrap();
    let section = (12 + 317 + 3) & !3;
    assert_eq!(out[section], 0x41, "fat EH section");
    assert_eq!(&out[section + 1..section + 4], [4 + 24 * 4, 0, 0]);
    assert_eq!(clause_offsets(&out)[0], [0, 0, 303, 303, 4, 0x0100_0001]);
    // Adding a clause re-plans one section; clearing them drops it and MoreSects.
    body.clauses_mut().clear();
    let out = body.encode().unwrap();
    assert_eq!(out[0] & 0x8, 0);
    assert_eq!(out.len(), 12 + 317);
}

/// What a call pops: its parameters, an implicit `this` (not an explicit one, which is among
/// the parameters), and for `calli` the function pointer; `newobj` pushes the new object.
#[test]
fn call_effects_count_this_the_function_pointer_and_the_new_object() {
    let sig = |call_conv: u8, ret: Type, params: Vec<Type>| MethodSig {
        call_conv: CallConv(call_conv),
        generic_params: 0,
        ret,
        params,
        sentinel: None,
    };
    let max = |code: &[u8], sig: MethodSig| identity(&fat(0, 8, 0, code)).compute_max_stack(|_| Some(sig.clone()));
    let has_this = CallConv::HAS_THIS;
    let explicit = CallConv::HAS_THIS | CallConv::EXPLICIT_THIS;
    // ldarg.0; ldc.i4.1; callvirt; ldc.i4.1; add; ret — an instance method of one int32.
    let virt = [0x02, 0x17, 0x6f, 1, 0, 0, 0x06, 0x17, 0x58, 0x2a];
    assert_eq!(max(&virt, sig(has_this, Type::I4, vec![Type::I4])), Ok(2));
    // The same, its `this` explicit: two parameters, nothing more.
    assert_eq!(max(&virt, sig(explicit, Type::I4, vec![Type::Object, Type::I4])), Ok(2));
    // ldc.i4.1; newobj .ctor(int32); ldc.i4.1; add; ret — the ctor's `this` is not popped.
    let new = [0x17, 0x73, 1, 0, 0, 0x06, 0x17, 0x58, 0x2a];
    assert_eq!(max(&new, sig(has_this, Type::Void, vec![Type::I4])), Ok(2));
    // ldarg.0; ldc.i4.1; ldc.i4.2 (the pointer); calli instance int32(int32); ldc.i4.1; add; ret
    let calli = [0x02, 0x17, 0x18, 0x29, 1, 0, 0, 0x11, 0x17, 0x58, 0x2a];
    assert_eq!(max(&calli, sig(has_this, Type::I4, vec![Type::I4])), Ok(3));
    // ldc.i4.1; ldc.i4.2; calli int32(int32); ldc.i4.1; add; ret
    let calli = [0x17, 0x18, 0x29, 1, 0, 0, 0x11, 0x17, 0x58, 0x2a];
    assert_eq!(max(&calli, sig(0, Type::I4, vec![Type::I4])), Ok(2));
}

#[test]
fn max_stack_is_computed_from_the_code_and_call_signatures() {
    // ldarg.0; ldarg.1; ldc.i4.1; call M(int32, int32) -> int32 (static); add; ret
    let code = [0x02, 0x03, 0x17, 0x28, 0x01, 0, 0, 0x06, 0x58, 0x2a];
    let mut body = identity(&fat(0, 20, 0, &code));
    let sig = MethodSig {
        call_conv: CallConv(0),
        generic_params: 0,
        ret: Type::I4,
        params: vec![Type::I4, Type::I4],
        sentinel: None,
    };
    assert_eq!(body.compute_max_stack(|t| (t == Token(0x0600_0001)).then(|| sig.clone())), Ok(3));
    assert_eq!(
        body.compute_max_stack(|_| None).unwrap_err(),
        IlError { offset: 3, kind: IlErrorKind::UnknownCall(Token(0x0600_0001)) }
    );
    body.recompute_max_stack(|_| Some(sig.clone())).unwrap();
    assert_eq!(body.encode().unwrap(), fat(0, 3, 0, &code));
    // Handlers start with the exception on the stack; a join with different depths is an error.
    let body = MethodBody::parse(&nested_and_adjacent()).unwrap();
    assert_eq!(body.compute_max_stack(|_| None), Ok(1));
    let bad = MethodBody::parse(&[0x16, 0x16, 0x2c, 0x01, 0x16, 0x2a]).unwrap(); // ldc 0; brfalse.s +1 (depth 0) vs fall through push
    assert_eq!(bad.compute_max_stack(|_| None).unwrap_err().kind, IlErrorKind::StackMismatch);
    let under = MethodBody::parse(&[0x06, 0x26, 0x2a]).unwrap();
    assert_eq!(
        under.compute_max_stack(|_| None).unwrap_err(),
        IlError { offset: 0, kind: IlErrorKind::StackUnderflow }
    );
}

#[test]
fn a_body_built_from_nothing() {
    let mut body = MethodBody::new();
    let ret = Instruction::simple(OpCode::RET);
    let top = body.push(Instruction::ldc_i4(1000));
    body.push(Instruction::branch(OpCode::BRTRUE_S, top));
    body.push(ret);
    assert_eq!(body.compute_max_stack(|_| None), Ok(1));
    assert_eq!(body.encode().unwrap(), [(8 << 2) | 2, 0x20, 0xe8, 0x03, 0, 0, 0x2d, 0xf9, 0x2a]);
}

#[test]
fn locals_append_through_the_signature_encoder() {
    let (sig, first) = append_locals(None, &[Type::I4, Type::Object]).unwrap();
    assert_eq!((sig, first), (vec![0x07, 0x02, 0x08, 0x1c], 0));
    let (sig, first) = append_locals(Some(&[0x07, 0x01, 0x45, 0x10, 0x05]), &[Type::String]).unwrap();
    assert_eq!((sig, first), (vec![0x07, 0x02, 0x45, 0x10, 0x05, 0x0e], 1));
    assert!(append_locals(Some(&[0x06, 0x08]), &[]).is_err());
    // Slots are 16-bit and 0xffff is none: 0xfffe locals in all, the last at 0xfffd, and no more.
    let (_, first) = append_locals(None, &vec![Type::I4; 0xfffe]).unwrap();
    assert_eq!(first, 0);
    let (sig, _) = append_locals(None, &vec![Type::I4; 0xfffd]).unwrap();
    assert_eq!(append_locals(Some(&sig), &[Type::Object]).unwrap().1, 0xfffd);
    assert!(append_locals(Some(&sig), &[Type::Object, Type::Object]).is_err());
    assert!(append_locals(None, &vec![Type::I4; 0xffff]).is_err());
}

#[test]
fn malformed_bodies_are_errors_with_offsets() {
    let e = |b: &[u8]| MethodBody::parse(b).unwrap_err();
    assert_eq!(e(&[]), IlError { offset: 0, kind: IlErrorKind::UnexpectedEnd });
    assert_eq!(e(&[0x01]), IlError { offset: 0, kind: IlErrorKind::BadHeader(0x01) });
    assert_eq!(e(&[0x0e, 0x2a]), IlError { offset: 1, kind: IlErrorKind::UnexpectedEnd });
    assert_eq!(e(&[0x0a, 0x20]), IlError { offset: 1, kind: IlErrorKind::UnexpectedEnd });
    assert_eq!(e(&[0x0a, 0x2b, 0x01]).kind, IlErrorKind::BadTarget(3));
    assert_eq!(e(&[0x0a, 0x2b, 0xfd]).kind, IlErrorKind::BadTarget(-1));
    let mut bad_size = fat(0, 8, 0, &[0x2a]);
    bad_size[1] = 0x20;
    assert_eq!(e(&bad_size).kind, IlErrorKind::BadHeaderSize(2));
    // a forged switch count
    assert_eq!(e(&[0x16, 0x45, 0xff, 0xff, 0xff, 0x7f]).kind, IlErrorKind::UnexpectedEnd);
    // encoding refuses an operand of the wrong kind
    let mut body = MethodBody::parse(&[0x06, 0x2a]).unwrap();
    let first = body.labels().next().unwrap();
    body.get_mut(first).unwrap().operand = Operand::I32(1);
    assert_eq!(body.encode().unwrap_err().kind, IlErrorKind::OperandMismatch(OpCode::RET));
    assert_eq!(
        IlError { offset: 3, kind: IlErrorKind::BadOpcode(0x24) }.to_string(),
        "IL offset 3: unknown opcode 0x24"
    );
}

#[path = "support/rng.rs"]
mod rng;
#[path = "support/runtimes.rs"]
mod runtimes;
#[path = "support/tables.rs"]
mod tables;
use rng::Rng;

/// A random valid body: random opcodes with sample operands, branches and switches to random
/// instructions, a few clauses over random ranges, tiny or fat.
fn random_body(rng: &mut Rng) -> Vec<u8> {
    let all: Vec<OpCode> = OpCode::all().collect();
    let n = 1 + rng.below(60) as usize;
    let mut body = MethodBody::parse(&[0x06, 0x2a]).unwrap();
    let ret = body.labels().next().unwrap();
    let mut labels = vec![ret];
    let mut pending = Vec::new();
    for _ in 0..n {
        let op = all[rng.below(all.len() as u64) as usize];
        let ins = match op.operand_kind() {
            OperandKind::InlineBrTarget | OperandKind::ShortInlineBrTarget => Instruction::branch(op, ret),
            OperandKind::InlineSwitch => {
                Instruction { opcode: op, operand: Operand::Switch(vec![ret; rng.below(5) as usize]) }
            }
            _ => Instruction { opcode: op, operand: sample_operand(op).0 },
        };
        let at = labels[rng.below(labels.len() as u64) as usize];
        let l = body.insert_before(at, [ins]).unwrap()[0];
        labels.push(l);
        pending.push(l);
    }
    // Targets anywhere (including END), now that all labels exist.
    let mut targets = labels.clone();
    targets.push(Label::END);
    for l in pending {
        let pick = |rng: &mut Rng| targets[rng.below(targets.len() as u64) as usize];
        match &mut body.get_mut(l).unwrap().operand {
            Operand::Branch(t) => *t = pick(rng),
            Operand::Switch(ts) => ts.iter_mut().for_each(|t| *t = pick(rng)),
            _ => {}
        }
    }
    let order: Vec<Label> = body.labels().chain([Label::END]).collect();
    for _ in 0..rng.below(4) {
        let mut range = || {
            let a = rng.below(order.len() as u64) as usize;
            let b = a + rng.below((order.len() - a) as u64) as usize;
            (order[a], order[b])
        };
        let (ts, te) = range();
        let (hs, he) = range();
        let kind = match rng.below(4) {
            0 => ClauseKind::Catch(Token(0x0100_0001)),
            1 => ClauseKind::Filter(order[0]),
            2 => ClauseKind::Finally,
            _ => ClauseKind::Fault,
        };
        body.clauses_mut().push(Clause::new(kind, ts, te, hs, he));
    }
    if rng.below(2) == 0 {
        body.set_max_stack(rng.below(40) as u16);
    }
    if rng.below(4) == 0 {
        body.set_local_var_sig(Token(0x1100_0001));
    }
    body.encode().unwrap()
}

#[test]
fn random_bodies_decode_encode_identically_and_edit_consistently() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for case in 0..400 {
        let bytes = random_body(&mut rng);
        let mut body = identity(&bytes);
        // Edit: insert or remove a few instructions, then check that the encoded body reads
        // back to the same instructions and the same clause ranges.
        for _ in 0..1 + rng.below(4) {
            let labels: Vec<Label> = body.labels().collect();
            let at = labels[rng.below(labels.len() as u64) as usize];
            if rng.below(3) == 0 && body.len() > 1 {
                body.remove(at).unwrap();
            } else {
                let count = rng.below(90) as usize;
                body.insert_before(at, (0..count).map(|_| Instruction::simple(OpCode::NOP))).unwrap();
            }
        }
        if rng.below(3) == 0 {
            body.compact().unwrap();
        }
        let out = body.encode().unwrap_or_else(|e| panic!("case {case}: {e}"));
        let back = identity(&out);
        assert_eq!(back.len(), body.len(), "case {case}");
        // Same instructions (short branches may have widened) and the same targets by position.
        let pos =
            |b: &MethodBody, l: Label| if l == Label::END { b.len() } else { b.labels().position(|x| x == l).unwrap() };
        for ((_, a), (_, b)) in body.iter().zip(back.iter()) {
            let widened = a.opcode.long_branch() == Some(b.opcode);
            assert!(a.opcode == b.opcode || widened, "case {case}: {} → {}", a.opcode, b.opcode);
            let ta: Vec<usize> = a.targets().iter().map(|l| pos(&body, *l)).collect();
            let tb: Vec<usize> = b.targets().iter().map(|l| pos(&back, *l)).collect();
            assert_eq!(ta, tb, "case {case}");
            if a.targets().is_empty() {
                assert_eq!(a.operand, b.operand, "case {case}");
            }
        }
        let ranges = |b: &MethodBody| -> Vec<[usize; 4]> {
            b.clauses()
                .iter()
                .map(|c| [pos(b, c.try_start), pos(b, c.try_end), pos(b, c.handler_start), pos(b, c.handler_end)])
                .collect()
        };
        assert_eq!(ranges(&body), ranges(&back), "case {case}");
    }
}

#[test]
fn random_bytes_never_panic_and_what_parses_encodes_back() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let mut parsed = 0;
    for _ in 0..20000 {
        let bytes: Vec<u8> = if rng.below(2) == 0 {
            let len = rng.below(40) as usize;
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            // A valid body with a byte changed.
            let mut b = random_body(&mut rng);
            let at = rng.below(b.len() as u64) as usize;
            b[at] = rng.next() as u8;
            b
        };
        if let Ok(body) = MethodBody::parse(&bytes) {
            parsed += 1;
            let out = body.encode().unwrap();
            // All of the body the headers declare, not only as much as the encoder wrote.
            let extent = body_extent(&bytes).expect("a parsed body lies within its bytes");
            assert_eq!(out, bytes[..extent], "{bytes:02x?}");
            let _ = body.compute_max_stack(|_| None);
        }
    }
    assert!(parsed > 1000, "{parsed}");
}

/// A quick benchmark: `cargo test --release --test il -- --ignored --nocapture bench`.
#[test]
#[ignore]
fn bench_parse_edit_encode() {
    let mut rng = Rng(7);
    let bodies: Vec<Vec<u8>> = (0..1000).map(|_| random_body(&mut rng)).collect();
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    let start = std::time::Instant::now();
    let rounds = 20;
    for _ in 0..rounds {
        for b in &bodies {
            let mut body = MethodBody::parse(b).unwrap();
            let first = body.labels().next().unwrap();
            body.insert_before(first, [Instruction::simple(OpCode::NOP)]).unwrap();
            std::hint::black_box(body.encode().unwrap());
        }
    }
    let t = start.elapsed();
    println!(
        "parse + insert + encode: {:.1} MB/s ({} bodies, {bytes} bytes, {rounds} rounds, {t:?})",
        (bytes * rounds) as f64 / t.as_secs_f64() / 1e6,
        bodies.len()
    );
}

/// `verify`: each rule, broken once in an otherwise valid body.
mod verify {
    use super::*;

    const FRAME: Frame = Frame { args: 1, locals: 1, returns: false };

    fn no_calls(_: Token) -> Option<MethodSig> {
        None
    }

    fn op(o: OpCode) -> Instruction {
        Instruction::simple(o)
    }

    /// `try { nop; leave OUT } catch { pop; leave OUT } OUT: ret`, with the labels.
    fn try_catch() -> (MethodBody, [Label; 6]) {
        let mut b = MethodBody::new();
        let t = b.push(op(OpCode::NOP));
        let leave = b.push(Instruction::branch(OpCode::LEAVE, Label::END));
        let h = b.push(op(OpCode::POP));
        let hleave = b.push(Instruction::branch(OpCode::LEAVE, Label::END));
        let out = b.push(op(OpCode::RET));
        for l in [leave, hleave] {
            b.get_mut(l).unwrap().operand = Operand::Branch(out);
        }
        let catch = ClauseKind::Catch(Token::new(Token::TYPE_REF, 1));
        b.clauses_mut().push(Clause::new(catch, t, h, h, out));
        (b, [t, leave, h, hleave, out, Label::END])
    }

    fn kind(b: &MethodBody, frame: Frame) -> IlErrorKind {
        b.verify(frame, no_calls).expect_err("verify passed a broken body").kind
    }

    #[test]
    fn a_valid_body_passes_and_its_stack_is_counted() {
        let (b, _) = try_catch();
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
    }

    #[test]
    fn ret_inside_a_region_is_refused() {
        let (mut b, [_, leave, ..]) = try_catch();
        *b.get_mut(leave).unwrap() = op(OpCode::RET);
        assert_eq!(kind(&b, FRAME), IlErrorKind::Misplaced(OpCode::RET));
    }

    #[test]
    fn a_branch_out_of_a_try_must_be_a_leave() {
        let (mut b, [_, leave, _, _, out, _]) = try_catch();
        *b.get_mut(leave).unwrap() = Instruction::branch(OpCode::BR, out);
        assert!(matches!(kind(&b, FRAME), IlErrorKind::BadTransfer(_)));
    }

    #[test]
    fn a_branch_into_a_handler_or_past_a_try_start_is_refused() {
        let (mut b, [t, _, h, ..]) = try_catch();
        b.insert_before(t, [Instruction::branch(OpCode::BR, h)]).unwrap();
        assert!(matches!(kind(&b, FRAME), IlErrorKind::BadTransfer(_)));
        let (mut b, [t, leave, ..]) = try_catch();
        b.insert_before(t, [Instruction::branch(OpCode::BR, leave)]).unwrap();
        assert!(matches!(kind(&b, FRAME), IlErrorKind::BadTransfer(_)));
        // To the first instruction is how a try is entered.
        let (mut b, [t, ..]) = try_catch();
        b.insert_before(t, [Instruction::branch(OpCode::BR, t)]).unwrap();
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
    }

    #[test]
    fn falling_into_a_handler_or_off_the_end_is_refused() {
        let (mut b, [_, leave, ..]) = try_catch();
        *b.get_mut(leave).unwrap() = op(OpCode::NOP);
        assert!(matches!(kind(&b, FRAME), IlErrorKind::BadTransfer(_)));
        let (mut b, [.., out, _]) = try_catch();
        *b.get_mut(out).unwrap() = op(OpCode::NOP);
        assert_eq!(kind(&b, FRAME), IlErrorKind::FallsOffEnd);
    }

    #[test]
    fn finally_and_filter_rules() {
        // A finally handler left by `leave` rather than `endfinally`.
        let (mut b, [_, _, h, hleave, out, _]) = try_catch();
        b.clauses_mut()[0].kind = ClauseKind::Finally;
        *b.get_mut(h).unwrap() = op(OpCode::NOP);
        assert!(matches!(kind(&b, FRAME), IlErrorKind::BadTransfer(_)));
        *b.get_mut(hleave).unwrap() = op(OpCode::ENDFINALLY);
        assert_eq!(b.verify(FRAME, no_calls), Ok(0));
        // endfinally in the try.
        let t = b.clauses()[0].try_start;
        *b.get_mut(t).unwrap() = op(OpCode::ENDFINALLY);
        assert_eq!(kind(&b, FRAME), IlErrorKind::Misplaced(OpCode::ENDFINALLY));
        // A filter that ends with two values on the stack.
        let (mut b, [t, _, h, ..]) = try_catch();
        let f = b.insert_before(h, [op(OpCode::DUP), op(OpCode::ENDFILTER)]).unwrap();
        b.clauses_mut()[0] = Clause::new(ClauseKind::Filter(f[0]), t, f[0], h, out);
        assert_eq!(kind(&b, FRAME), IlErrorKind::StackDepth { expected: 1, found: 2 });
        *b.get_mut(f[0]).unwrap() = op(OpCode::POP);
        b.insert_after(f[0], [Instruction::ldc_i4(1)]).unwrap();
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
        // rethrow in a filter rather than a catch handler.
        *b.get_mut(f[0]).unwrap() = op(OpCode::RETHROW);
        assert_eq!(kind(&b, FRAME), IlErrorKind::Misplaced(OpCode::RETHROW));
    }

    #[test]
    fn localloc_in_a_handler_is_refused() {
        let (mut b, [_, _, h, ..]) = try_catch();
        b.insert_after(h, [Instruction::ldc_i4(8), op(OpCode::LOCALLOC), op(OpCode::POP)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::Misplaced(OpCode::LOCALLOC));
    }

    #[test]
    fn endfilter_outside_a_filter_and_localloc_in_a_try() {
        // endfilter in the try, not in a filter.
        let (mut b, [t, ..]) = try_catch();
        *b.get_mut(t).unwrap() = op(OpCode::ENDFILTER);
        assert_eq!(kind(&b, FRAME), IlErrorKind::Misplaced(OpCode::ENDFILTER));
        // localloc in a protected region is allowed (only handlers refuse it).
        let (mut b, [t, ..]) = try_catch();
        b.insert_after(t, [Instruction::ldc_i4(8), op(OpCode::LOCALLOC), op(OpCode::POP)]).unwrap();
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
    }

    #[test]
    fn a_branch_to_the_end_or_to_no_instruction_is_refused() {
        let (mut b, [_, leave, ..]) = try_catch();
        b.get_mut(leave).unwrap().operand = Operand::Branch(Label::END);
        assert_eq!(kind(&b, FRAME), IlErrorKind::FallsOffEnd);
        // A label of another, longer body names nothing here.
        let mut other = MethodBody::new();
        let foreign = (0..20).map(|_| other.push(op(OpCode::NOP))).last().unwrap();
        let (mut b, [_, leave, ..]) = try_catch();
        b.get_mut(leave).unwrap().operand = Operand::Branch(foreign);
        assert_eq!(kind(&b, FRAME), IlErrorKind::UnknownLabel(foreign));
    }

    #[test]
    fn two_clauses_may_share_a_try_but_not_a_handler() {
        // try { nop; leave OUT } catch A { pop; leave OUT } catch B { pop; leave OUT } OUT: ret
        let (mut b, [t, _, h, _, out, _]) = try_catch();
        let second = b.insert_before(out, [op(OpCode::POP), Instruction::branch(OpCode::LEAVE, out)]).unwrap();
        b.clauses_mut()[0].handler_end = second[0];
        let catch = ClauseKind::Catch(Token::new(Token::TYPE_REF, 2));
        b.clauses_mut().push(Clause::new(catch, t, h, second[0], out));
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
        // The second clause's handler the first's.
        b.clauses_mut()[1].handler_start = h;
        b.clauses_mut()[1].handler_end = second[0];
        assert!(matches!(kind(&b, FRAME), IlErrorKind::ClauseOrder(1) | IlErrorKind::ClauseOverlap(1)));
    }

    /// `try { nop; leave OUT } finally { try { nop; leave Y } catch { <in the catch>; leave Y } Y:
    /// endfinally } OUT: ret`: a catch nested at the start of a finally handler, shorter than it
    /// but ending further in, so that ordering regions by anything but their length puts the
    /// catch outside the finally.
    fn catch_in_finally(in_catch: Instruction) -> MethodBody {
        let mut b = MethodBody::new();
        let t = b.push(op(OpCode::NOP));
        let leave = b.push(op(OpCode::NOP));
        let f = b.push(op(OpCode::NOP));
        let inner_leave = b.push(op(OpCode::NOP));
        let h = b.push(op(OpCode::POP));
        b.push(in_catch);
        let h_leave = b.push(op(OpCode::NOP));
        let y = b.push(op(OpCode::ENDFINALLY));
        let out = b.push(op(OpCode::RET));
        for (l, to) in [(leave, out), (inner_leave, y), (h_leave, y)] {
            *b.get_mut(l).unwrap() = Instruction::branch(OpCode::LEAVE, to);
        }
        let catch = ClauseKind::Catch(Token::new(Token::TYPE_REF, 1));
        b.clauses_mut().extend([Clause::new(catch, f, h, h, y), Clause::new(ClauseKind::Finally, t, f, f, out)]);
        b
    }

    #[test]
    fn a_catch_nested_in_a_finally_is_the_innermost_region_of_its_code() {
        assert_eq!(catch_in_finally(op(OpCode::NOP)).verify(FRAME, no_calls), Ok(1));
        // rethrow is directly in the nested catch: allowed.
        assert_eq!(catch_in_finally(op(OpCode::RETHROW)).verify(FRAME, no_calls), Ok(1));
        // endfinally there is in the catch, not directly in the finally.
        let b = catch_in_finally(op(OpCode::ENDFINALLY));
        assert_eq!(kind(&b, FRAME), IlErrorKind::Misplaced(OpCode::ENDFINALLY));
    }

    #[test]
    fn a_body_with_more_regions_than_a_mask_holds_is_checked_as_well() {
        // Seventy try/catch in a row (140 regions): `try { nop; leave N } catch { pop; leave N }`,
        // each N the next try's first instruction, the last one's a ret.
        let mut b = MethodBody::new();
        let mut pending: Vec<Label> = Vec::new();
        let mut handlers = Vec::new();
        for _ in 0..70 {
            let t = b.push(op(OpCode::NOP));
            for l in pending.drain(..) {
                b.get_mut(l).unwrap().operand = Operand::Branch(t);
            }
            let leave = b.push(Instruction::branch(OpCode::LEAVE, t));
            let h = b.push(op(OpCode::POP));
            let h_leave = b.push(Instruction::branch(OpCode::LEAVE, t));
            pending.extend([leave, h_leave]);
            handlers.push((t, h));
        }
        let out = b.push(op(OpCode::RET));
        for l in pending {
            b.get_mut(l).unwrap().operand = Operand::Branch(out);
        }
        let catch = ClauseKind::Catch(Token::new(Token::TYPE_REF, 1));
        let ends: Vec<Label> = handlers.iter().skip(1).map(|(t, _)| *t).chain([out]).collect();
        for ((t, h), end) in handlers.iter().zip(ends) {
            b.clauses_mut().push(Clause::new(catch, *t, *h, *h, end));
        }
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
        // Into the last handler from outside it.
        let (_, last_handler) = handlers[69];
        let first = handlers[0].0;
        b.insert_before(first, [Instruction::branch(OpCode::BR, last_handler)]).unwrap();
        assert!(matches!(kind(&b, FRAME), IlErrorKind::BadTransfer(_)));
    }

    #[test]
    fn stack_depth_rules() {
        // A try entered with a value on the stack.
        let (mut b, [t, ..]) = try_catch();
        let labels = b.insert_before(t, [Instruction::ldc_i4(1)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::StackDepth { expected: 0, found: 1 });
        *b.get_mut(labels[0]).unwrap() = op(OpCode::NOP);
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
        // ret with nothing where a value is returned, and with a value where none is.
        let (b, _) = try_catch();
        assert_eq!(kind(&b, Frame { returns: true, ..FRAME }), IlErrorKind::StackDepth { expected: 1, found: 0 });
        let (mut b, [.., out, _]) = try_catch();
        b.replace(out, [Instruction::ldc_i4(1), op(OpCode::RET)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::StackDepth { expected: 0, found: 1 });
        assert_eq!(b.verify(Frame { returns: true, ..FRAME }, no_calls), Ok(1));
    }

    #[test]
    fn errors_name_the_byte_offset_of_the_instruction() {
        // nop (0); ldc.i4.s 100 (1, two bytes); pop (3); pop (4: nothing left to pop); ret (5)
        let mut b = MethodBody::new();
        b.push(op(OpCode::NOP));
        b.push(Instruction::ldc_i4(100));
        b.push(op(OpCode::POP));
        b.push(op(OpCode::POP));
        b.push(op(OpCode::RET));
        let underflow = IlError { offset: 4, kind: IlErrorKind::StackUnderflow };
        assert_eq!(b.verify(FRAME, no_calls), Err(underflow.clone()));
        assert_eq!(b.compute_max_stack(no_calls), Err(underflow));
        // nop (0); nop (1); ldarg.s 7 (2: past the frame's one argument); pop; ret
        let mut b = MethodBody::new();
        b.push(op(OpCode::NOP));
        b.push(op(OpCode::NOP));
        b.push(Instruction::ldarg(7));
        b.push(op(OpCode::POP));
        b.push(op(OpCode::RET));
        assert_eq!(b.verify(FRAME, no_calls), Err(IlError { offset: 2, kind: IlErrorKind::BadArgument(7) }));
        // An operand of the wrong kind, at byte 1.
        let mut b = MethodBody::new();
        b.push(op(OpCode::NOP));
        b.push(Instruction { opcode: OpCode::LDC_I4_S, operand: Operand::I32(1) });
        b.push(op(OpCode::RET));
        assert_eq!(
            b.verify(FRAME, no_calls),
            Err(IlError { offset: 1, kind: IlErrorKind::OperandMismatch(OpCode::LDC_I4_S) })
        );
    }

    #[test]
    fn clauses_nest_and_come_inner_first() {
        // try { try { nop; leave A } catch { pop; leave A } A: leave OUT } catch { pop; leave OUT } OUT: ret
        let mut b = MethodBody::new();
        let t = b.push(op(OpCode::NOP));
        let l1 = b.push(op(OpCode::NOP));
        let h1 = b.push(op(OpCode::POP));
        let l2 = b.push(op(OpCode::NOP));
        let a = b.push(op(OpCode::NOP));
        let h2 = b.push(op(OpCode::POP));
        let l3 = b.push(op(OpCode::NOP));
        let out = b.push(op(OpCode::RET));
        for (l, to) in [(l1, a), (l2, a), (a, out), (l3, out)] {
            *b.get_mut(l).unwrap() = Instruction::branch(OpCode::LEAVE, to);
        }
        let catch = ClauseKind::Catch(Token::new(Token::TYPE_REF, 1));
        let inner = Clause::new(catch, t, h1, h1, a);
        let outer = Clause::new(catch, t, h2, h2, out);
        b.clauses_mut().extend([inner, outer]);
        assert_eq!(b.verify(FRAME, no_calls), Ok(1));
        b.clauses_mut().reverse();
        assert_eq!(kind(&b, FRAME), IlErrorKind::ClauseOrder(1));
        // The inner handler running past the outer try's end.
        let mut b2 = b.clone();
        b2.clauses_mut().reverse();
        b2.clauses_mut()[0].handler_end = l3;
        assert_eq!(kind(&b2, FRAME), IlErrorKind::ClauseOverlap(1));
        // A clause's handler overlapping its own try.
        let mut b3 = b.clone();
        b3.clauses_mut().truncate(1);
        b3.clauses_mut()[0].try_end = l3;
        assert_eq!(kind(&b3, FRAME), IlErrorKind::ClauseOverlap(0));
    }

    #[test]
    fn a_try_crossing_another_clause_is_refused() {
        // 0 nop; 1 nop; 2 leave OUT; 3 pop; 4 leave OUT; 5 pop; 6 leave OUT; OUT: 7 ret.
        // Clause 0: try [0, 3), handler [3, 5); clause 1: handler [5, 7) and try [1, 4),
        // which runs from inside clause 0's try into its handler.
        let mut b = MethodBody::new();
        let l: Vec<Label> = [OpCode::NOP, OpCode::NOP, OpCode::NOP, OpCode::POP, OpCode::NOP, OpCode::POP, OpCode::NOP]
            .into_iter()
            .map(|o| b.push(op(o)))
            .collect();
        let out = b.push(op(OpCode::RET));
        for i in [2, 4, 6] {
            *b.get_mut(l[i]).unwrap() = Instruction::branch(OpCode::LEAVE, out);
        }
        let catch = ClauseKind::Catch(Token::new(Token::TYPE_REF, 1));
        b.clauses_mut().push(Clause::new(catch, l[0], l[3], l[3], l[5]));
        b.clauses_mut().push(Clause::new(catch, l[1], l[3], l[5], out));
        // Clause 1's try [1, 3): within clause 0's, and listed after it: the wrong order.
        assert_eq!(kind(&b, FRAME), IlErrorKind::ClauseOrder(1));
        b.clauses_mut()[1].try_end = l[4];
        assert_eq!(kind(&b, FRAME), IlErrorKind::ClauseOverlap(1));
        // A handler that is another clause's try.
        let (mut b, [t, _, h, _, out, _]) = try_catch();
        let catch = ClauseKind::Catch(Token::new(Token::TYPE_REF, 2));
        b.clauses_mut().push(Clause::new(catch, h, out, t, h));
        assert!(matches!(kind(&b, FRAME), IlErrorKind::ClauseOrder(1) | IlErrorKind::ClauseOverlap(1)));
    }

    #[test]
    fn indexes_beyond_the_frame_are_refused() {
        let (mut b, [t, ..]) = try_catch();
        b.insert_before(t, [Instruction::ldloc(1), op(OpCode::POP)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::BadLocal(1));
        assert_eq!(b.verify(Frame { locals: 2, ..FRAME }, no_calls), Ok(1));
        let (mut b, [t, ..]) = try_catch();
        b.insert_before(t, [Instruction::ldarga(300), op(OpCode::POP)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::BadArgument(300));
        assert_eq!(b.verify(Frame { args: 301, ..FRAME }, no_calls), Ok(1));
        // The short forms name their index in the opcode.
        let (mut b, [t, ..]) = try_catch();
        b.insert_before(t, [op(OpCode::LDARG_1), op(OpCode::POP)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::BadArgument(1));
        let (mut b, [t, ..]) = try_catch();
        b.insert_before(t, [Instruction::ldc_i4(0), op(OpCode::STLOC_1)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::BadLocal(1));
        let (mut b, [t, ..]) = try_catch();
        b.insert_before(t, [op(OpCode::LDLOC_3), op(OpCode::POP)]).unwrap();
        assert_eq!(kind(&b, FRAME), IlErrorKind::BadLocal(3));
    }

    #[test]
    fn short_forms_are_chosen_for_indexes() {
        assert_eq!(Instruction::ldarg(3), op(OpCode::LDARG_3));
        assert_eq!(Instruction::ldarg(4), Instruction { opcode: OpCode::LDARG_S, operand: Operand::Var(4) });
        assert_eq!(Instruction::stloc(256), Instruction { opcode: OpCode::STLOC, operand: Operand::Var(256) });
        assert_eq!(Instruction::ldloca(0), Instruction { opcode: OpCode::LDLOCA_S, operand: Operand::Var(0) });
    }
}

/// `Wrapper`: what the wrapping does to bodies of each shape.
mod wrap {
    use super::*;

    fn op(o: OpCode) -> Instruction {
        Instruction::simple(o)
    }

    const HANDLER: Token = Token::new(Token::MEMBER_REF, 9);
    const CALLEE: Token = Token::new(Token::MEMBER_REF, 8);

    fn sigs(t: Token) -> Option<MethodSig> {
        // static void Handler(object); static int32 Callee()
        match t {
            HANDLER => MethodSig::decode(&[0x00, 0x01, 0x01, 0x1c]).ok(),
            CALLEE => MethodSig::decode(&[0x00, 0x00, 0x08]).ok(),
            _ => None,
        }
    }

    /// static int32 F()
    fn int_method() -> MethodSig {
        MethodSig::decode(&[0x00, 0x00, 0x08]).unwrap()
    }

    #[test]
    fn tail_calls_become_calls_and_every_return_goes_through_the_end() {
        // tail. call Callee; ret
        let mut b = MethodBody::new();
        b.push(op(OpCode::TAIL));
        b.push(Instruction::token(OpCode::CALL, CALLEE));
        b.push(op(OpCode::RET));
        let w = Wrapper::new(&b, &int_method(), None).unwrap();
        let ex = w.exception_local();
        let end = [Instruction::ldloc(ex), Instruction::token(OpCode::CALL, HANDLER)];
        let body = w.finish([], end, sigs).unwrap().into_body(Token::new(Token::STANDALONE_SIG, 1));
        let ops: Vec<OpCode> = body.iter().map(|(_, i)| i.opcode).collect();
        assert!(!ops.contains(&OpCode::TAIL), "{ops:?}");
        // One `ret`: the new end of the method.
        assert_eq!(ops.iter().filter(|o| **o == OpCode::RET).count(), 1, "{ops:?}");
        assert_eq!(body.clauses().len(), 3, "no begin code, no begin guard");
        assert_eq!(body.local_var_sig(), Some(Token::new(Token::STANDALONE_SIG, 1)));
        assert!(body.init_locals());
    }

    #[test]
    fn unguarded_wrapping_is_one_finally_region_with_one_end() {
        // tail. call Callee; ret
        let mut b = MethodBody::new();
        b.push(op(OpCode::TAIL));
        b.push(Instruction::token(OpCode::CALL, CALLEE));
        b.push(op(OpCode::RET));
        let w = Wrapper::new(&b, &int_method(), None).unwrap();
        let ret = w.return_local().unwrap();
        let begin = [op(OpCode::LDNULL), Instruction::token(OpCode::CALL, HANDLER)];
        // The end says how the body ended: the local the wrapper sets to 1 on a return.
        let mut given = None;
        let end = |returned: u16| {
            given = Some(returned);
            [Instruction::ldloc(returned), Instruction::token(OpCode::CALL, HANDLER)]
        };
        let body = w.finish_unguarded(begin, end, sigs).unwrap().into_body(Token::new(Token::STANDALONE_SIG, 1));
        let returned = given.unwrap();
        assert_eq!(returned, 2, "after the return value and the exception");
        let code: Vec<(Label, Instruction)> = body.iter().map(|(l, i)| (l, i.clone())).collect();
        let ops: Vec<OpCode> = code.iter().map(|(_, i)| i.opcode).collect();
        assert_eq!(
            ops,
            [
                OpCode::LDNULL,
                OpCode::CALL, // begin
                OpCode::CALL, // the original call, no longer a tail call
                OpCode::STLOC_0,
                OpCode::LDC_I4_1,
                OpCode::STLOC_2, // returned = 1
                OpCode::LEAVE,
                OpCode::LDLOC_2,
                OpCode::CALL,
                OpCode::ENDFINALLY, // the finally handler: the end, once
                OpCode::LDLOC_0,
                OpCode::RET,
            ],
            "{ops:?}"
        );
        assert_eq!(code[3].1, Instruction::stloc(ret));
        assert_eq!(code[5].1, Instruction::stloc(returned));
        assert_eq!(code[6].1, Instruction::branch(OpCode::LEAVE, code[10].0), "the return leaves past the finally");
        let [c] = body.clauses() else { panic!("{:?}", body.clauses()) };
        assert_eq!(c.kind, ClauseKind::Finally);
        assert_eq!(
            (c.try_start, c.try_end, c.handler_start, c.handler_end),
            (code[2].0, code[7].0, code[7].0, code[10].0)
        );
        assert!(body.init_locals(), "returned starts at 0: a throw leaves it so");
    }

    #[test]
    fn unguarded_wrapping_retargets_what_named_a_dropped_tail_prefix() {
        // ldc.i4.0; brtrue TAIL; nop; TAIL: tail. call Callee; ret
        let mut b = MethodBody::new();
        b.push(op(OpCode::LDC_I4_0));
        let branch = b.push(op(OpCode::NOP));
        b.push(op(OpCode::NOP));
        let tail = b.push(op(OpCode::TAIL));
        let call = b.push(Instruction::token(OpCode::CALL, CALLEE));
        b.push(op(OpCode::RET));
        *b.get_mut(branch).unwrap() = Instruction::branch(OpCode::BRTRUE, tail);
        let w = Wrapper::new(&b, &int_method(), None).unwrap();
        let end = |returned: u16| [Instruction::ldloc(returned), Instruction::token(OpCode::CALL, HANDLER)];
        let body = w.finish_unguarded([], end, sigs).unwrap().into_body(Token::new(Token::STANDALONE_SIG, 1));
        assert!(body.iter().all(|(_, i)| i.opcode != OpCode::TAIL));
        assert_eq!(body.get(branch), Some(&Instruction::branch(OpCode::BRTRUE, call)), "the branch reaches the call");
        assert_eq!(body.get(call).map(|i| i.opcode), Some(OpCode::CALL));
    }

    /// `tail.` prefixes at the very end, with no instruction after them (IL no compiler writes):
    /// what named them names the finally, and the wrapped body is refused by the checks, never
    /// a panic.
    #[test]
    fn unguarded_wrapping_of_trailing_tail_prefixes_is_refused() {
        for tails in 1..=2 {
            // ldc.i4.0; brtrue TAIL; ret; TAIL: tail. (tail.)
            let mut b = MethodBody::new();
            b.push(op(OpCode::LDC_I4_0));
            let branch = b.push(op(OpCode::NOP));
            b.push(op(OpCode::RET));
            let tail = b.push(op(OpCode::TAIL));
            for _ in 1..tails {
                b.push(op(OpCode::TAIL));
            }
            *b.get_mut(branch).unwrap() = Instruction::branch(OpCode::BRTRUE, tail);
            let w = Wrapper::new(&b, &int_method(), None).unwrap();
            let end = |returned: u16| [Instruction::ldloc(returned), Instruction::token(OpCode::CALL, HANDLER)];
            let got = w.finish_unguarded([], end, sigs);
            assert!(got.is_err(), "{tails}: {got:?}");
        }
    }

    #[test]
    fn unguarded_wrapping_keeps_the_bodys_regions_inside_and_first() {
        // br TRY; OUT: ret; TRY: nop; leave OUT; (catch) pop; leave OUT  -- the handler ends at END
        let mut b = MethodBody::new();
        let br = b.push(op(OpCode::NOP));
        let out = b.push(op(OpCode::RET));
        let t = b.push(op(OpCode::NOP));
        b.push(Instruction::branch(OpCode::LEAVE, out));
        let h = b.push(op(OpCode::POP));
        b.push(Instruction::branch(OpCode::LEAVE, out));
        *b.get_mut(br).unwrap() = Instruction::branch(OpCode::BR, t);
        b.clauses_mut().push(Clause::new(ClauseKind::Catch(Token::new(Token::TYPE_REF, 1)), t, h, h, Label::END));
        let void = MethodSig::decode(&[0x00, 0x00, 0x01]).unwrap();
        let w = Wrapper::new(&b, &void, None).unwrap();
        assert_eq!(w.return_local(), None);
        let end = |_| [op(OpCode::LDNULL), Instruction::token(OpCode::CALL, HANDLER)];
        let body = w.finish_unguarded([], end, sigs).unwrap().into_body(Token::new(Token::STANDALONE_SIG, 1));
        let clauses = body.clauses();
        assert_eq!(clauses.len(), 2);
        assert!(matches!(clauses[0].kind, ClauseKind::Catch(_)), "the body's own region stays first (inner)");
        assert_eq!(clauses[1].kind, ClauseKind::Finally);
        assert_eq!(clauses[0].handler_end, clauses[1].try_end, "the catch ends where the finally handler starts");
        // A backward branch to the first instruction does not run begin code again: here no
        // begin, and the first instruction is still the original `br`.
        assert_eq!(body.iter().next().map(|(_, i)| i.opcode), Some(OpCode::BR));
    }

    #[test]
    fn unguarded_wrapping_refuses_what_wrapping_refuses() {
        let mut ok = MethodBody::new();
        ok.push(Instruction::token(OpCode::CALL, CALLEE));
        ok.push(op(OpCode::RET));
        let w = Wrapper::new(&ok, &int_method(), None).unwrap();
        let l = ok.labels().next().unwrap();
        for bad in [Instruction::branch(OpCode::BR, l), op(OpCode::RET), op(OpCode::THROW), op(OpCode::TAIL)] {
            let e = w.clone().finish_unguarded([bad.clone()], |_| [], sigs).unwrap_err();
            assert_eq!(e, WrapError::NotStraightLine(bad.opcode));
            // Bad end code.
            assert_eq!(w.clone().finish_unguarded([], |_| vec![bad.clone()], sigs).unwrap_err(), e);
        }
        let e = w.clone().finish_unguarded([op(OpCode::POP)], |_| [], sigs).unwrap_err();
        assert!(matches!(e, WrapError::Il(IlError { kind: IlErrorKind::StackUnderflow, .. })), "{e}");
        let e = w.finish_unguarded([], |_| [Instruction::ldloc(9), op(OpCode::POP)], sigs).unwrap_err();
        assert!(matches!(e, WrapError::Il(IlError { kind: IlErrorKind::BadLocal(9), .. })), "{e}");
    }

    #[test]
    fn a_handler_running_to_the_end_of_the_code_ends_before_the_wrapping() {
        // br TRY; OUT: ret; TRY: nop; leave OUT; (catch) pop; leave OUT  -- the handler ends at END
        let mut b = MethodBody::new();
        let br = b.push(op(OpCode::NOP));
        let out = b.push(op(OpCode::RET));
        let t = b.push(op(OpCode::NOP));
        b.push(Instruction::branch(OpCode::LEAVE, out));
        let h = b.push(op(OpCode::POP));
        b.push(Instruction::branch(OpCode::LEAVE, out));
        *b.get_mut(br).unwrap() = Instruction::branch(OpCode::BR, t);
        b.clauses_mut().push(Clause::new(ClauseKind::Catch(Token::new(Token::TYPE_REF, 1)), t, h, h, Label::END));
        let void = MethodSig::decode(&[0x00, 0x00, 0x01]).unwrap();
        b.verify(Frame::of(&void, None), sigs).unwrap();
        let w = Wrapper::new(&b, &void, None).unwrap();
        let ex = w.exception_local();
        let end = [Instruction::ldloc(ex), Instruction::token(OpCode::CALL, HANDLER)];
        let begin = [op(OpCode::LDNULL), Instruction::token(OpCode::CALL, HANDLER)];
        let body = w.finish(begin, end, sigs).unwrap().into_body(Token::new(Token::STANDALONE_SIG, 1));
        assert_ne!(body.clauses()[0].handler_end, Label::END);
        assert!(body.clauses().iter().all(|c| c.handler_end != Label::END));
    }

    #[test]
    fn what_cannot_be_wrapped_is_refused_with_a_reason() {
        let mut b = MethodBody::new();
        b.push(Instruction::token(OpCode::JMP, CALLEE));
        let err = Wrapper::new(&b, &int_method(), None).unwrap_err();
        assert_eq!(err, WrapError::Refused(Refusal::Jmp));
        assert!(err.to_string().contains("jmp"), "{err}");
        assert_eq!(
            Wrapper::new(&MethodBody::new(), &int_method(), None).unwrap_err(),
            WrapError::Refused(Refusal::NoCode)
        );
        // Begin and end code with a branch, a return or a dangling prefix.
        let mut ok = MethodBody::new();
        ok.push(Instruction::token(OpCode::CALL, CALLEE));
        ok.push(op(OpCode::RET));
        let w = Wrapper::new(&ok, &int_method(), None).unwrap();
        let l = ok.labels().next().unwrap();
        for bad in [Instruction::branch(OpCode::BR, l), op(OpCode::RET), op(OpCode::THROW), op(OpCode::TAIL)] {
            let e = w.clone().finish([bad.clone()], [], sigs).unwrap_err();
            assert_eq!(e, WrapError::NotStraightLine(bad.opcode));
            assert_eq!(w.clone().finish([], [bad.clone()], sigs).unwrap_err(), e);
        }
        // Begin code that pops what is not there: the wrapped body does not verify.
        let e = w.clone().finish([op(OpCode::POP)], [], sigs).unwrap_err();
        assert!(matches!(e, WrapError::Il(IlError { kind: IlErrorKind::StackUnderflow, .. })), "{e}");
        // A local index beyond the frame.
        let e = w.finish([Instruction::ldloc(7), op(OpCode::POP)], [], sigs).unwrap_err();
        assert!(matches!(e, WrapError::Il(IlError { kind: IlErrorKind::BadLocal(7), .. })), "{e}");
    }

    /// Hostile input of every kind — random bytes, valid bodies with a byte changed, random
    /// method and local signatures, call signatures that lie — is wrapped or refused, never a
    /// panic; and what is wrapped verifies again after it is encoded and read back.
    #[test]
    fn hostile_bodies_and_signatures_are_wrapped_or_refused() {
        let mut rng = Rng(0x5eed_0fc0_ffee_0042);
        // Valid bodies, each with a signature it verifies under.
        let seeds: Vec<(Vec<u8>, &[u8])> = vec![
            (nested_and_adjacent(), &[0x00, 0x00, 0x01]),         // static void F()
            (fat(0x8, 2, 0, &[0x16, 0x2a]), &[0x00, 0x00, 0x08]), // ldc.i4.0; ret
            (fat(0x8, 2, 0, &[0x28, 8, 0, 0, 0x0a, 0x2a]), &[0x00, 0x00, 0x08]), // call Callee; ret
            (vec![0x0a, 0x03, 0x2a], &[0x20, 0x01, 0x08, 0x08]),  // instance int32 F(int32): ldarg.1; ret
        ];
        let other_sigs: [&[u8]; 3] = [
            &[0x20, 0x01, 0x01, 0x08],             // instance void F(int32)
            &[0x00, 0x02, 0x1c, 0x10, 0x08, 0x0e], // static object F(ref int32, string)
            &[0x30, 0x01, 0x01, 0x1e, 0x00],       // generic instance void F<T>(T)
        ];
        let (mut wrapped, mut refused) = (0, 0);
        for case in 0..20_000u32 {
            let (seed, seed_sig) = seeds[rng.below(seeds.len() as u64) as usize].clone();
            let bytes = match rng.below(4) {
                0 => (0..rng.below(48) as usize).map(|_| rng.next() as u8).collect(),
                1 => seed,
                2 => random_body(&mut rng),
                _ => {
                    let mut b = seed;
                    let at = rng.below(b.len() as u64) as usize;
                    b[at] = rng.next() as u8;
                    b
                }
            };
            let Ok(body) = MethodBody::parse(&bytes) else { continue };
            let sig_bytes: Vec<u8> = match rng.below(6) {
                0 => (0..rng.below(8) as usize).map(|_| rng.next() as u8).collect(),
                1 => other_sigs[rng.below(other_sigs.len() as u64) as usize].to_vec(),
                _ => seed_sig.to_vec(),
            };
            let Ok(method) = MethodSig::decode(&sig_bytes) else { continue };
            let locals: Option<Vec<u8>> = match rng.below(4) {
                0 | 1 => None,
                2 => Some(vec![0x07, 0x02, 0x0e, 0x08]),
                _ => Some((0..rng.below(8) as usize).map(|_| rng.next() as u8).collect()),
            };
            let lie = if rng.below(2) == 0 { 0 } else { rng.next() };
            // The callee's signature as the metadata would say it, or a lie about it.
            let call_sig = move |t: Token| match lie % 3 {
                0 => sigs(t),
                1 => None,
                _ => MethodSig::decode(&[0x00, 0x03, 0x08, 0x08, 0x08, 0x08]).ok(),
            };
            let unguarded = case % 2 == 1;
            let result = Wrapper::new(&body, &method, locals.as_deref()).and_then(|w| {
                let ex = w.exception_local();
                let end = [Instruction::ldloc(ex), Instruction::token(OpCode::CALL, HANDLER)];
                let begin = [op(OpCode::LDNULL), Instruction::token(OpCode::CALL, HANDLER)];
                if unguarded {
                    w.finish_unguarded(begin, |_| end.clone(), call_sig)
                } else {
                    w.finish(begin, end, call_sig)
                }
            });
            match result {
                Ok(w) => {
                    wrapped += 1;
                    let frame = w.frame();
                    let out = w.into_body(Token::new(Token::STANDALONE_SIG, 1));
                    let encoded = out.encode().unwrap_or_else(|e| panic!("case {case}: {e}: {bytes:02x?}"));
                    let back = MethodBody::parse(&encoded).unwrap_or_else(|e| panic!("case {case}: {e}"));
                    back.verify(frame, call_sig).unwrap_or_else(|e| panic!("case {case}: {e}: {bytes:02x?}"));
                }
                Err(e) => {
                    refused += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        // Both outcomes are exercised, the seeds' unchanged copies wrapping.
        assert!(wrapped > 300 && refused > 3000, "wrapped {wrapped}, refused {refused}");
    }

    #[test]
    fn new_locals_follow_the_existing_ones() {
        let mut b = MethodBody::new();
        b.push(Instruction::token(OpCode::CALL, CALLEE));
        b.push(op(OpCode::RET));
        // Two existing locals: string, int32.
        let mut w = Wrapper::new(&b, &int_method(), Some(&[0x07, 0x02, 0x0e, 0x08])).unwrap();
        assert_eq!((w.return_local(), w.exception_local()), (Some(2), 3));
        assert_eq!(w.add_local(Type::I8), Ok(4));
        assert_eq!(w.frame(), Frame { args: 0, locals: 5, returns: true });
        let out = w.finish([], [], sigs).unwrap();
        assert_eq!(out.locals_signature(), [0x07, 0x05, 0x0e, 0x08, 0x08, 0x1c, 0x0a]);
    }
}

/// The real thing: every IL method body and every signature blob of CoreCLR 8.0.4's
/// System.Private.CoreLib, read from its metadata tables (a minimal ECMA-335 II.24 reader
/// below), decodes and encodes back byte for byte; and the max stack computed for each body,
/// with call signatures from the same tables, never exceeds what the compiler declared.
mod corelib {
    use super::*;
    use corprof_sig::sig::{FieldSig, MethodSpec, PropertySig, Signature, TypeSpec};

    fn u16_at(b: &[u8], at: usize) -> usize {
        u16::from_le_bytes([b[at], b[at + 1]]) as usize
    }
    fn u32_at(b: &[u8], at: usize) -> usize {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
    }

    pub struct Module {
        pub file: Vec<u8>,
        sections: Vec<(usize, usize, usize)>,
        blob: usize,
        strings: usize,
        /// The largest heap stream's size.
        pub largest_heap: usize,
        rows: [usize; 64],
        tables: [usize; 64],
        widths: [Vec<usize>; 64],
    }

    impl Module {
        pub fn load(path: &std::path::Path) -> Module {
            let file = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let pe = u32_at(&file, 0x3c);
            assert_eq!(&file[pe..pe + 4], b"PE\0\0");
            let coff = pe + 4;
            let n_sections = u16_at(&file, coff + 2);
            let opt = coff + 20;
            let opt_size = u16_at(&file, coff + 16);
            let dirs = opt + if u16_at(&file, opt) == 0x20b { 112 } else { 96 };
            let sections = (0..n_sections)
                .map(|i| {
                    let s = opt + opt_size + 40 * i;
                    (u32_at(&file, s + 12), u32_at(&file, s + 8).max(u32_at(&file, s + 16)), u32_at(&file, s + 20))
                })
                .collect();
            let mut m = Module {
                file,
                sections,
                blob: 0,
                strings: 0,
                largest_heap: 0,
                rows: [0; 64],
                tables: [0; 64],
                widths: std::array::from_fn(|_| Vec::new()),
            };
            let cli = m.offset(u32_at(&m.file, dirs + 14 * 8));
            let root = m.offset(u32_at(&m.file, cli + 8));
            assert_eq!(u32_at(&m.file, root), 0x424a_5342);
            let version_len = u32_at(&m.file, root + 12);
            let mut at = root + 16 + version_len + 2;
            let streams = u16_at(&m.file, at);
            at += 2;
            let mut tilde = 0;
            for _ in 0..streams {
                let (offset, name_at) = (u32_at(&m.file, at), at + 8);
                let name_len = m.file[name_at..].iter().position(|&b| b == 0).unwrap();
                let name = &m.file[name_at..name_at + name_len];
                if [&b"#Strings"[..], b"#Blob", b"#GUID", b"#US"].contains(&name) {
                    m.largest_heap = m.largest_heap.max(u32_at(&m.file, at + 4));
                }
                match name {
                    b"#~" => tilde = root + offset,
                    b"#Blob" => m.blob = root + offset,
                    b"#Strings" => m.strings = root + offset,
                    _ => {}
                }
                at = name_at + ((name_len + 4) & !3);
            }
            let heap_sizes = m.file[tilde + 6];
            let valid = u64::from_le_bytes(m.file[tilde + 8..tilde + 16].try_into().unwrap());
            let mut at = tilde + 24;
            for t in 0..64 {
                if valid & (1 << t) != 0 {
                    m.rows[t] = u32_at(&m.file, at);
                    at += 4;
                }
            }
            if heap_sizes & 0x40 != 0 {
                at += 4;
            }
            for t in 0..0x2d {
                if m.rows[t] == 0 {
                    continue;
                }
                let widths = tables::widths(t, &m.rows, heap_sizes);
                m.tables[t] = at;
                at += m.rows[t] * widths.iter().sum::<usize>();
                m.widths[t] = widths;
            }
            m
        }

        pub fn offset(&self, rva: usize) -> usize {
            let &(va, _, raw) = self.sections.iter().find(|(va, size, _)| (*va..va + size).contains(&rva)).unwrap();
            rva - va + raw
        }

        pub fn rows(&self, table: usize) -> usize {
            self.rows[table]
        }

        /// Column `col` of row `rid` (1-based).
        pub fn cell(&self, table: usize, rid: usize, col: usize) -> usize {
            let w = &self.widths[table];
            let at = self.tables[table] + (rid - 1) * w.iter().sum::<usize>() + w[..col].iter().sum::<usize>();
            if w[col] == 2 { u16_at(&self.file, at) } else { u32_at(&self.file, at) }
        }

        pub fn blob(&self, index: usize) -> &[u8] {
            let at = self.blob + index;
            let (len, n) = corprof_sig::sig::decode_compressed_u32(&self.file[at..]).unwrap();
            &self.file[at + n..at + n + len as usize]
        }

        pub fn string(&self, index: usize) -> String {
            let at = self.strings + index;
            let len = self.file[at..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&self.file[at..at + len]).into_owned()
        }

        /// The TypeDef whose method list holds MethodDef `rid`.
        pub fn owner_of_method(&self, rid: usize) -> usize {
            (1..=self.rows(0x02)).rev().find(|&td| self.cell(0x02, td, 5) <= rid).unwrap()
        }

        /// The signature behind a call's token.
        pub fn call_sig(&self, t: Token) -> Option<MethodSig> {
            let (table, rid) = (t.table() as usize, t.rid() as usize);
            let blob = match table {
                0x06 => self.cell(0x06, rid, 4),
                0x0a => self.cell(0x0a, rid, 2),
                0x11 => self.cell(0x11, rid, 0),
                0x2b => {
                    let coded = self.cell(0x2b, rid, 0);
                    let table = if coded & 1 == 0 { 0x06 } else { 0x0a };
                    return self.call_sig(Token::new(table, (coded >> 1) as u32));
                }
                _ => return None,
            };
            MethodSig::decode(self.blob(blob)).ok()
        }
    }

    /// CoreLib of a runtime scripts/setup installs (`runtimes::runtimes`).
    fn load(runtime: &str, version: &str) -> Module {
        let dll = runtimes::runtimes()
            .join(format!("dotnet-{runtime}/shared/Microsoft.NETCore.App/{version}/System.Private.CoreLib.dll"));
        Module::load(&dll)
    }

    fn corelib() -> Module {
        load("8", "8.0.4")
    }

    /// CoreLib of both runtimes the tests run on: two compilers' worth of IL.
    fn corelibs() -> [(&'static str, Module); 2] {
        [("8.0.4", corelib()), ("3.1.23", load("3", "3.1.23"))]
    }

    #[test]
    fn every_corelib_signature_round_trips() {
        for (version, m) in corelibs() {
            signatures_round_trip(version, &m);
        }
    }

    fn signatures_round_trip(version: &str, m: &Module) {
        let mut checked = 0;
        let mut check = |what: &str, rid: usize, blob: &[u8], encoded: Result<Vec<u8>, String>| {
            assert_eq!(encoded.as_deref(), Ok(blob), "{version}: {what} row {rid}: {blob:02x?}");
            checked += 1;
        };
        for rid in 1..=m.rows(0x06) {
            let b = m.blob(m.cell(0x06, rid, 4));
            check("MethodDef", rid, b, MethodSig::decode(b).and_then(|s| s.encode()).map_err(|e| e.to_string()));
        }
        for rid in 1..=m.rows(0x04) {
            let b = m.blob(m.cell(0x04, rid, 2));
            check("Field", rid, b, FieldSig::decode(b).and_then(|s| s.encode()).map_err(|e| e.to_string()));
        }
        for (table, col) in [(0x0a, 2), (0x11, 0)] {
            for rid in 1..=m.rows(table) {
                let b = m.blob(m.cell(table, rid, col));
                check(
                    "MemberRef/StandAloneSig",
                    rid,
                    b,
                    Signature::decode(b).and_then(|s| s.encode()).map_err(|e| e.to_string()),
                );
            }
        }
        for rid in 1..=m.rows(0x17) {
            let b = m.blob(m.cell(0x17, rid, 2));
            check("Property", rid, b, PropertySig::decode(b).and_then(|s| s.encode()).map_err(|e| e.to_string()));
        }
        for rid in 1..=m.rows(0x1b) {
            let b = m.blob(m.cell(0x1b, rid, 0));
            check("TypeSpec", rid, b, TypeSpec::decode(b).and_then(|s| s.encode()).map_err(|e| e.to_string()));
        }
        for rid in 1..=m.rows(0x2b) {
            let b = m.blob(m.cell(0x2b, rid, 1));
            check("MethodSpec", rid, b, MethodSpec::decode(b).and_then(|s| s.encode()).map_err(|e| e.to_string()));
        }
        assert!(checked > 30_000, "{version}: {checked}");
        println!("{version}: {checked} signatures");
    }

    #[test]
    fn every_corelib_body_round_trips_and_its_max_stack_holds() {
        for (version, m) in corelibs() {
            bodies_round_trip(version, &m);
        }
    }

    fn bodies_round_trip(version: &str, m: &Module) {
        let (mut bodies, mut exact, mut fat, mut with_clauses) = (0, 0, 0, 0);
        for rid in 1..=m.rows(0x06) {
            let (rva, impl_flags) = (m.cell(0x06, rid, 0), m.cell(0x06, rid, 1));
            // IL only (not native or runtime-provided code).
            if rva == 0 || impl_flags & 0x3 != 0 {
                continue;
            }
            let at = m.offset(rva);
            let body = MethodBody::parse(&m.file[at..]).unwrap_or_else(|e| panic!("{version}: MethodDef {rid}: {e}"));
            let out = body.encode().unwrap();
            let extent = super::body_extent(&m.file[at..]).expect("a body within the file");
            assert_eq!(out, m.file[at..at + extent], "{version}: MethodDef {rid}: the whole body");
            let max =
                body.compute_max_stack(|t| m.call_sig(t)).unwrap_or_else(|e| panic!("{version}: MethodDef {rid}: {e}"));
            assert!(
                max <= body.max_stack(),
                "{version}: MethodDef {rid}: computed {max} > declared {}",
                body.max_stack()
            );
            exact += usize::from(max == body.max_stack() && body.is_fat());
            fat += usize::from(body.is_fat());
            with_clauses += usize::from(!body.clauses().is_empty());
            bodies += 1;
        }
        println!(
            "{version}: {bodies} bodies ({fat} fat, {with_clauses} with clauses), max stack exact for {exact} fat ones"
        );
        assert!(bodies > 15_000 && fat > 5_000 && with_clauses > 500, "{version}: {bodies} {fat} {with_clauses}");
        // Tiny bodies declare 8 whatever they need; fat ones declare what the compiler
        // computed, which ours matches.
        assert_eq!(exact, fat, "{version}");
    }

    /// The wrapping's dry run: every IL body of both CoreLibs passes `verify` as the compiler
    /// wrote it (so the checks refuse nothing the JIT takes), and wrapped between a begin call
    /// and an end call that reads every argument, the return value, the exception and a state
    /// local, every one passes again, also after encoding and reading back; the only methods
    /// left unwrapped are those refused with a reason.
    #[test]
    fn every_corelib_body_verifies_and_wraps() {
        for (version, m) in corelibs() {
            wrap_every_body(version, &m);
        }
    }

    fn wrap_every_body(version: &str, m: &Module) {
        // Handlers behind tokens no table of the module has.
        let begin = Token::new(Token::MEMBER_REF, 0xff_fff0);
        let end = Token::new(Token::MEMBER_REF, 0xff_fff1);
        let call_sig = |t: Token| match t {
            // static int64 Begin(int32)
            t if t == begin => MethodSig::decode(&[0x00, 0x01, 0x0a, 0x08]).ok(),
            // static void End(int64, object)
            t if t == end => MethodSig::decode(&[0x00, 0x02, 0x01, 0x0a, 0x1c]).ok(),
            t => m.call_sig(t),
        };
        let (mut wrapped, mut with_clauses, mut refused) = (0, 0, Vec::new());
        for rid in 1..=m.rows(0x06) {
            let (rva, impl_flags) = (m.cell(0x06, rid, 0), m.cell(0x06, rid, 1));
            if rva == 0 || impl_flags & 0x3 != 0 {
                continue;
            }
            let what = format!("{version}: MethodDef {rid} ({})", m.string(m.cell(0x06, rid, 3)));
            let body = MethodBody::parse(&m.file[m.offset(rva)..]).unwrap();
            let method = MethodSig::decode(m.blob(m.cell(0x06, rid, 4))).unwrap();
            let locals = body.local_var_sig().map(|t| m.blob(m.cell(0x11, t.rid() as usize, 0)));
            let decoded = locals.map(|l| corprof_sig::sig::LocalVarSig::decode(l).unwrap());
            let frame = Frame::of(&method, decoded.as_ref());
            let max = body.verify(frame, call_sig).unwrap_or_else(|e| panic!("{what} as compiled: {e}"));
            assert!(max <= body.max_stack(), "{what}");

            let mut w = match Wrapper::new(&body, &method, locals) {
                Ok(w) => w,
                Err(WrapError::Refused(r)) => {
                    refused.push(format!("{what}: {r}"));
                    continue;
                }
                Err(e) => panic!("{what}: {e}"),
            };
            let state = w.add_local(Type::I8).unwrap();
            let (ret, ex) = (w.return_local(), w.exception_local());
            assert_eq!(ret.is_some(), frame.returns, "{what}");
            let begin_code =
                [Instruction::ldc_i4(rid as i32), Instruction::token(OpCode::CALL, begin), Instruction::stloc(state)];
            let mut end_code =
                vec![Instruction::ldloc(state), Instruction::ldloc(ex), Instruction::token(OpCode::CALL, end)];
            for a in 0..frame.args as u16 {
                end_code.extend([Instruction::ldarg(a), Instruction::simple(OpCode::POP)]);
            }
            end_code.extend(ret.into_iter().flat_map(|r| [Instruction::ldloc(r), Instruction::simple(OpCode::POP)]));
            // The unguarded shape too: one finally region more, nothing else.
            let end_unguarded = |returned: u16| {
                let mut code = vec![Instruction::ldloc(state), Instruction::ldloc(returned)];
                code.extend([Instruction::simple(OpCode::CONV_I8), Instruction::simple(OpCode::POP)]);
                code.extend(ret.into_iter().flat_map(|r| [Instruction::ldloc(r), Instruction::simple(OpCode::POP)]));
                code.push(Instruction::simple(OpCode::POP));
                code
            };
            let light = w.clone().finish_unguarded(begin_code.clone(), end_unguarded, call_sig);
            let light = light.unwrap_or_else(|e| panic!("{what} unguarded: {e}"));
            let light_frame = light.frame();
            let light = light.into_body(Token::new(Token::STANDALONE_SIG, 0xff_ffff));
            assert_eq!(light.clauses().len(), body.clauses().len() + 1, "{what}");
            let back = MethodBody::parse(&light.encode().unwrap_or_else(|e| panic!("{what}: {e}"))).unwrap();
            back.verify(light_frame, call_sig).unwrap_or_else(|e| panic!("{what} unguarded, read back: {e}"));

            let out = w.finish(begin_code, end_code, call_sig).unwrap_or_else(|e| panic!("{what}: {e}"));
            let new_frame = out.frame();
            assert_eq!(new_frame.locals, frame.locals + 2 + u32::from(frame.returns), "{what}");
            let sig = corprof_sig::sig::LocalVarSig::decode(out.locals_signature()).unwrap();
            assert_eq!(sig.locals.len() as u32, new_frame.locals, "{what}");
            let body_out = out.into_body(Token::new(Token::STANDALONE_SIG, 0xff_ffff));
            assert_eq!(body_out.clauses().len(), body.clauses().len() + 4, "{what}");
            let bytes = body_out.encode().unwrap_or_else(|e| panic!("{what}: {e}"));
            let back = MethodBody::parse(&bytes).unwrap();
            back.verify(new_frame, call_sig).unwrap_or_else(|e| panic!("{what} read back: {e}"));
            assert!(back.init_locals(), "{what}");
            with_clauses += usize::from(!body.clauses().is_empty());
            wrapped += 1;
        }
        println!(
            "{version}: {wrapped} bodies wrapped ({with_clauses} with clauses of their own), {} refused",
            refused.len()
        );
        for r in &refused {
            println!("  {r}");
        }
        assert!(wrapped > 15_000 && with_clauses > 500, "{version}: {wrapped} {with_clauses}");
    }

    /// Names from the tables, as `MetaDataImport` would give them.
    impl corprof_sig::sig::NameResolver for Module {
        fn type_name(&self, t: Token) -> Option<corprof_sig::sig::TypeName> {
            let rid = t.rid() as usize;
            let (namespace, name, enclosing) = match t.table() {
                0x02 if (1..=self.rows(0x02)).contains(&rid) => {
                    let enclosing = (1..=self.rows(0x29))
                        .find(|&r| self.cell(0x29, r, 0) == rid)
                        .map(|r| Token::new(0x02, self.cell(0x29, r, 1) as u32));
                    (self.string(self.cell(0x02, rid, 2)), self.string(self.cell(0x02, rid, 1)), enclosing)
                }
                0x01 if (1..=self.rows(0x01)).contains(&rid) => {
                    let scope = self.cell(0x01, rid, 0);
                    let enclosing = (scope & 3 == 3).then(|| Token::new(0x01, (scope >> 2) as u32));
                    (self.string(self.cell(0x01, rid, 2)), self.string(self.cell(0x01, rid, 1)), enclosing)
                }
                _ => return None,
            };
            Some(corprof_sig::sig::TypeName { namespace, name, enclosing })
        }
        fn generic_param_name(&self, owner: Token, index: u32) -> Option<String> {
            let coded = (owner.rid() as usize) << 1 | usize::from(owner.table() == 0x06);
            (1..=self.rows(0x2a))
                .find(|&r| self.cell(0x2a, r, 2) == coded && self.cell(0x2a, r, 0) == index as usize)
                .map(|r| self.string(self.cell(0x2a, r, 3)))
        }
        fn type_spec(&self, t: Token) -> Option<Vec<u8>> {
            (t.table() == 0x1b).then(|| self.blob(self.cell(0x1b, t.rid() as usize, 0)).to_vec())
        }
    }

    /// `corprof_sig::image::type_names` on both CoreLibs gives, row for row, the names this
    /// test's own reader builds from the TypeDef and NestedClass tables.
    #[test]
    fn every_corelib_type_name_is_read_from_the_file() {
        use std::os::unix::fs::FileExt;
        for runtime in ["8/shared/Microsoft.NETCore.App/8.0.4", "3/shared/Microsoft.NETCore.App/3.1.23"] {
            let path = runtimes::runtimes().join(format!("dotnet-{runtime}/System.Private.CoreLib.dll"));
            let m = Module::load(&path);
            let file = std::fs::File::open(&path).unwrap();
            let mut reads = 0;
            let len = file.metadata().unwrap().len();
            let names = corprof_sig::image::type_names(len, |at, buf| {
                reads += 1;
                file.read_exact_at(buf, at)
            })
            .unwrap_or_else(|e| panic!("{runtime}: {e}"));
            assert!(reads <= 12, "{runtime}: {reads} reads");
            let types = names;
            let names: Vec<String> = types.iter().collect();
            let own = |td: usize| {
                let (name, namespace) = (m.string(m.cell(0x02, td, 1)), m.string(m.cell(0x02, td, 2)));
                if namespace.is_empty() { name } else { format!("{namespace}.{name}") }
            };
            let outer = |td: usize| (1..=m.rows(0x29)).find(|&r| m.cell(0x29, r, 0) == td).map(|r| m.cell(0x29, r, 1));
            let expected: Vec<String> = (1..=m.rows(0x02))
                .map(|td| {
                    let mut name = own(td);
                    let mut at = td;
                    while let Some(o) = outer(at) {
                        name = format!("{}+{name}", own(o));
                        at = o;
                    }
                    name
                })
                .collect();
            assert_eq!(names, expected, "{runtime}");
            // Read from the open file, into buffers not zeroed first: the same.
            let of_file = corprof_sig::image::type_names_of(&file).unwrap_or_else(|e| panic!("{runtime}: {e}"));
            assert_eq!(of_file.iter().collect::<Vec<String>>(), names, "{runtime}");
            assert_eq!(of_file.largest_heap_bytes(), types.largest_heap_bytes(), "{runtime}");
            // A file cut short is an error, or reads the same where the cut is past all that is
            // read; one that is not a file of bytes is an error.
            let bytes = std::fs::read(&path).unwrap();
            let cut = std::env::temp_dir().join(format!("corprof-sig-cut-{}", std::process::id()));
            let n = bytes.len();
            for len in [0, 64, 4096, n / 4, n / 2, n / 4 * 3] {
                std::fs::write(&cut, &bytes[..len]).unwrap();
                let short = std::fs::File::open(&cut).unwrap();
                match corprof_sig::image::type_names_of(&short) {
                    Err(_) => {}
                    Ok(t) => {
                        assert!(len > 4096, "{runtime}: {len} bytes read as a module");
                        assert_eq!(t.iter().collect::<Vec<String>>(), names, "{runtime}: {len} bytes");
                    }
                }
            }
            let _ = std::fs::remove_file(&cut);
            let dir = std::fs::File::open(env!("CARGO_MANIFEST_DIR")).unwrap();
            assert!(corprof_sig::image::type_names_of(&dir).is_err(), "{runtime}: a directory");
            // Devices say they are empty: nothing is read from them, however much they would give.
            for device in ["/dev/null", "/dev/zero"] {
                let device = std::fs::File::open(device).unwrap();
                assert!(corprof_sig::image::type_names_of(&device).is_err(), "{runtime}: {device:?}");
            }
            assert_eq!(names[0], "<Module>");
            for known in ["System.Convert", "System.Collections.Generic.List`1", "System.Environment+SpecialFolder"] {
                assert!(names.iter().any(|n| n == known), "{runtime}: {known}");
            }
            // `contains` says the same, without making names, and nothing else.
            assert!(names.iter().all(|n| types.contains(n)), "{runtime}");
            for absent in [
                "Convert",
                "System.Convert+Nope",
                "Nope.Convert",
                "System.Environment.SpecialFolder",
                "SpecialFolder",
                "System.Environment+SpecialFolder+Inner",
                "",
                "+",
            ] {
                assert!(!types.contains(absent), "{runtime}: {absent}");
            }
            assert_eq!(types.full_name(0), None);
            assert_eq!(types.full_name(types.len() + 1), None);
            // Its metadata's extent: past what CoreCLR's writable metadata holds in its small form
            // (2047 rows, 32767 heap bytes).
            assert_eq!(types.largest_table_rows(), (0..64).map(|t| m.rows(t)).max().unwrap(), "{runtime}");
            assert_eq!(types.largest_heap_bytes(), m.largest_heap, "{runtime}");
            assert!(types.largest_table_rows() > 2047 && types.largest_heap_bytes() > 32767, "{runtime}");
        }
    }

    #[test]
    fn corelib_methods_print_as_people_read_them() {
        let m = corelib();
        let find = |ty: &str, method: &str, params: usize| {
            (1..=m.rows(0x06))
                .filter(|&rid| m.string(m.cell(0x06, rid, 3)) == method)
                .filter_map(|rid| {
                    let owner = Token::new(0x02, m.owner_of_method(rid) as u32);
                    let sig = MethodSig::decode(m.blob(m.cell(0x06, rid, 4))).unwrap();
                    let text =
                        corprof_sig::sig::format_method(&m, owner, method, &sig, Some(Token::new(0x06, rid as u32)));
                    (text.contains(ty) && sig.params.len() == params).then_some(text)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            find(" System.Collections.Generic.Dictionary<", "TryGetValue", 2),
            ["System.Boolean System.Collections.Generic.Dictionary<TKey, TValue>::TryGetValue(TKey, TValue&)"]
        );
        assert_eq!(
            find("System.Array::", "ConvertAll", 2),
            ["TOutput[] System.Array::ConvertAll<TInput, TOutput>(TInput[], System.Converter<TInput, TOutput>)"]
        );
        assert_eq!(
            find("Enumerator::", "MoveNext", 0)
                .iter()
                .filter(|t| t.contains("Dictionary<TKey, TValue>+Enumerator"))
                .collect::<Vec<_>>(),
            ["System.Boolean System.Collections.Generic.Dictionary<TKey, TValue>+Enumerator::MoveNext()"]
        );
    }

    #[test]
    fn corelib_bodies_edited_read_back_consistently() {
        let m = corelib();
        let mut edited = 0;
        for rid in (1..=m.rows(0x06)).step_by(7) {
            let (rva, impl_flags) = (m.cell(0x06, rid, 0), m.cell(0x06, rid, 1));
            if rva == 0 || impl_flags & 0x3 != 0 {
                continue;
            }
            let at = m.offset(rva);
            let mut body = MethodBody::parse(&m.file[at..]).unwrap();
            let before = body.offsets().unwrap();
            let first = body.labels().next().unwrap();
            // A probe at the start: ldc.i4 rid; pop.
            body.insert_before(first, [Instruction::ldc_i4(rid as i32), Instruction::simple(OpCode::POP)]).unwrap();
            body.recompute_max_stack(|t| m.call_sig(t)).unwrap();
            let out = body.encode().unwrap();
            let back = MethodBody::parse(&out).unwrap();
            assert_eq!(back.encode().unwrap(), out, "MethodDef {rid}");
            assert_eq!(back.len(), body.len(), "MethodDef {rid}");
            assert_eq!(back.clauses().len(), body.clauses().len(), "MethodDef {rid}");
            // Every original instruction moved by the probe's size (or more, past a widened branch).
            let after = back.offsets().unwrap();
            let shift = after[2].1;
            assert!((2..=6).contains(&shift), "MethodDef {rid}: probe of {shift} bytes");
            for (i, (_, old)) in before.iter().enumerate() {
                assert!(after[i + 2].1 >= old + shift, "MethodDef {rid}");
            }
            edited += 1;
        }
        assert!(edited > 3000, "{edited}");
    }
}
