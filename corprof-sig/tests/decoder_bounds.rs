//! The signature decoder's and formatter's memory is bounded by the bytes they are given: hostile
//! signatures and type specifications (those found by fuzzing and a few more) decode or format under
//! 64 MiB at peak, and within what the documentation promises per blob byte. (corprof's
//! tests/decoder_bounds.rs does the same for the EventPipe decoders.)
//!
//! Its own test binary, so that its global allocator (which records the peak of live heap bytes)
//! is its own. The cases take a lock, so that one case's measure does not include another's.

use corprof_sig::sig::format::{MAX_FORMATTED_LEN, TRUNCATED};
use corprof_sig::sig::{
    Generics, LocalVarSig, MAX_GENERIC_PARAMS, MethodSig, NameResolver, SigErrorKind, Token, Type, TypeName,
    format_method, format_type,
};

#[path = "support/peak_alloc.rs"]
mod peak_alloc;
use peak_alloc::*;

/// A module's names: TypeRef 1 is `Hostile.Fan`12`, TypeSpec 1 is `blob`, generic parameters have
/// `param_len`-byte names.
struct Module {
    blob: Vec<u8>,
    param_len: usize,
}

impl NameResolver for Module {
    fn type_name(&self, token: Token) -> Option<TypeName> {
        (token == Token::new(Token::TYPE_REF, 1)).then(|| TypeName {
            namespace: "Hostile".into(),
            name: "Fan`12".into(),
            enclosing: None,
        })
    }
    fn generic_param_name(&self, _owner: Token, index: u32) -> Option<String> {
        (self.param_len > 0).then(|| format!("{index:0>width$}", width = self.param_len))
    }
    fn type_spec(&self, token: Token) -> Option<Vec<u8>> {
        (token == Token::new(Token::TYPE_SPEC, 1)).then(|| self.blob.clone())
    }
}

/// Found by fuzzing: a generic-parameter count of 0x1FFFFFFF made `format_method` allocate 5.9 GB.
#[test]
fn a_forged_generic_parameter_count_is_refused() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (result, _) =
        bounded("0x1fffffff generic parameters", || MethodSig::decode(&[0x10, 0xdf, 0xff, 0xff, 0xff, 0x00, 0x01]));
    assert_eq!(result.unwrap_err().kind, SigErrorKind::TooManyGenericParams(0x1fff_ffff));
}

/// The most generic parameters metadata allows, each with a kilobyte-long name: the text stops at
/// its limit.
#[test]
fn the_most_generic_parameters_print_within_the_text_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let module = Module { blob: Vec::new(), param_len: 1024 };
    let (text, _) = bounded("2^16 generic parameters with 1 KiB names", || {
        let sig = MethodSig::decode(&[0x10, 0xc0, 0x01, 0x00, 0x00, 0x00, 0x01]).unwrap();
        assert_eq!(sig.generic_params, MAX_GENERIC_PARAMS);
        format_method(&module, Token::new(Token::TYPE_REF, 1), "M", &sig, Some(Token(0x0600_0001)))
    });
    assert!(text.starts_with("System.Void Hostile.Fan::M<0000"), "{}", &text[..80]);
    assert!(text.ends_with(TRUNCATED));
    assert_eq!(text.len(), MAX_FORMATTED_LEN + TRUNCATED.len());
}

/// Found by fuzzing: a type specification instantiating a 12-parameter type with itself 12 times made
/// `format_type` allocate 4 GB (12^8 leaves at the depth cap).
#[test]
fn a_self_referencing_type_specification_with_fan_out_is_cut() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // GENERICINST CLASS TypeRef#1, 12 arguments, each CLASS TypeSpec#1.
    let mut blob = vec![0x15, 0x12, (1 << 2) | 1, 12];
    for _ in 0..12 {
        blob.extend([0x12, (1 << 2) | 2]);
    }
    let module = Module { blob, param_len: 0 };
    let start = std::time::Instant::now();
    let (text, _) = bounded("self-referencing TypeSpec, fan-out 12", || {
        format_type(&Type::Class(Token::new(Token::TYPE_SPEC, 1)), &module, Generics::default())
    });
    assert!(text.starts_with("Hostile.Fan<Hostile.Fan<Hostile.Fan<"), "{}", &text[..80]);
    assert!(text.ends_with(TRUNCATED));
    assert!(text.len() <= MAX_FORMATTED_LEN + TRUNCATED.len());
    assert!(start.elapsed().as_secs() < 10, "the walk stops with the text: {:?}", start.elapsed());
}

/// Function pointers nested as deep as allowed, each claiming as many parameters as bytes are
/// left: a reservation by count at every level would add up to the depth times the blob.
#[test]
fn nested_parameter_counts_reserve_nothing_ahead() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const PADDING: usize = 100_000;
    let mut blob = Vec::new();
    for _ in 0..40 {
        blob.push(0x00);
        blob.extend((0xc000_0000 | PADDING as u32).to_be_bytes());
        // Returns void, and the first parameter is the next function pointer.
        blob.extend([0x01, 0x1b]);
    }
    blob.extend([0x00, 0x00, 0x01]);
    blob.extend(std::iter::repeat_n(0x08, PADDING));
    let (result, peak) = bounded("nested function pointers claiming every byte", || MethodSig::decode(&blob));
    assert_eq!(result.unwrap_err().kind, SigErrorKind::TooDeep);
    assert!(peak < 4 << 20, "{peak} bytes");
}

/// What the decoder's documentation promises: under 3 × `size_of::<Type>()` + 8 bytes per blob
/// byte, measured on a long local-variable signature (one node per byte, the densest case).
#[test]
fn a_signature_costs_what_its_documentation_says_per_byte() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n = 200_000usize;
    let mut blob = vec![0x07, 0xc0 | (n >> 24) as u8, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    blob.extend(std::iter::repeat_n(0x08, n));
    let (sig, peak) = bounded("200,000 locals", || LocalVarSig::decode(&blob).unwrap());
    assert_eq!(sig.locals.len(), n);
    let per_byte = 3 * size_of::<Type>() + 8;
    assert!(peak <= per_byte * blob.len(), "{peak} bytes for {} blob bytes, over {per_byte} each", blob.len());
}

#[test]
fn a_type_is_as_large_as_the_documentation_says() {
    // `sig`'s decoder documentation counts on 64-byte nodes for its 200 bytes per blob byte.
    #[cfg(target_pointer_width = "64")]
    assert_eq!(size_of::<Type>(), 64);
}

#[path = "support/rng.rs"]
mod rng;
#[path = "support/runtimes.rs"]
mod runtimes;

/// `image::type_names` over a small module's file with its bytes changed, cut short or made up:
/// never a panic, never a read outside the file, and never more memory than a few times the
/// file's size, whatever its headers claim.
#[test]
fn hostile_module_files_are_read_within_the_file() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = runtimes::runtimes().join("dotnet-8/shared/Microsoft.NETCore.App/8.0.4/System.Web.dll");
    let real = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let names = |file: &[u8]| {
        corprof_sig::image::type_names(file.len() as u64, |at, buf| {
            let at = usize::try_from(at).expect("an offset past the address space");
            let bytes =
                file.get(at..at + buf.len()).unwrap_or_else(|| panic!("read past the file: {at}+{}", buf.len()));
            buf.copy_from_slice(bytes);
            Ok(())
        })
    };
    let clean = names(&real).unwrap();
    assert_eq!(clean.full_name(1).as_deref(), Some("<Module>"), "{clean:?}");
    assert!(clean.contains("<Module>"));

    let mut rng = rng::Rng(0x1a4e_5eed_0000_0001);
    let (mut read, mut refused, mut peak) = (0, 0, 0);
    for _ in 0..20_000 {
        let mut file = real.clone();
        match rng.below(4) {
            // A few bytes changed, anywhere.
            0 | 1 => {
                for _ in 0..1 + rng.below(8) {
                    let at = rng.below(file.len() as u64) as usize;
                    file[at] = rng.next() as u8;
                }
            }
            // A 32-bit field of the headers (the first 1 KiB: PE header, CLI header, metadata
            // root and stream headers of a small file) made large.
            2 => {
                let at = rng.below(1024) as usize & !3;
                file[at..at + 4].copy_from_slice(&(rng.next() as u32 | 0x0100_0000).to_le_bytes());
            }
            // Cut short.
            _ => file.truncate(rng.below(file.len() as u64) as usize),
        }
        let (result, bytes) = peak_of(|| {
            names(&file).map(|n| {
                // Whatever the bytes, `contains` agrees with the names made.
                let all: Vec<String> = n.iter().collect();
                assert!(all.iter().filter(|name| !name.contains('\u{fffd}')).all(|name| n.contains(name)), "{all:?}");
                (all.len(), n.contains("System.Web+Nested"))
            })
        });
        peak = peak.max(bytes);
        match result {
            Ok(_) => read += 1,
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(read > 1000 && refused > 1000, "read {read}, refused {refused}");
    assert!(peak <= 16 * real.len(), "peak {peak} bytes for a {}-byte file", real.len());
}
