//! OpenAI's o200k BPE (the `tokenizer = "o200k"` setting), built from a
//! packed copy of its ranks that is a third of the size of tiktoken-rs's
//! own embedded table.
//!
//! tiktoken-rs embeds o200k as 3.6 MB of base64 text, which was 14 % of the
//! release binary for a tokenizer that is off by default. `o200k.pack` holds
//! the same 199,998 tokens in rank order, each as one length byte and its
//! bytes, zlib-compressed (1.05 MB). The BPE is built from it on first use
//! (~100 ms on a blocking thread; the caller runs it there) and kept for the
//! process; tiktoken-rs's own table is never referenced, so the linker
//! leaves it out.
//!
//! Invariants: the pack is exactly tiktoken-rs's o200k_base, token for
//! token; the test `the_pack_is_tiktoken_o200k_base` checks it against
//! tiktoken-rs and, with `GYRE_WRITE_O200K_PACK=1`, writes it anew (after a
//! tiktoken-rs upgrade). A pack that cannot be read leaves the caller on its
//! byte estimate rather than failing a run.

use std::sync::OnceLock;

use tiktoken_rs::{CoreBPE, ENDOFPROMPT, ENDOFTEXT, O200K_BASE_PAT_STR};

static PACK: &[u8] = include_bytes!("o200k.pack");

/// The o200k BPE, built once per process; `None` if the pack is unreadable.
pub(crate) fn bpe() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| {
        let built = build();
        if let Err(why) = &built {
            tracing::warn!("the o200k tokenizer is unavailable ({why}); estimating from bytes");
        }
        built.ok()
    })
    .as_ref()
}

fn build() -> Result<CoreBPE, String> {
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(PACK)
        .map_err(|e| format!("the packed table does not inflate: {e:?}"))?;
    let tokens = tokens(&raw).ok_or("the packed table is cut short")?;
    let specials = [
        (ENDOFTEXT.to_string(), 199_999),
        (ENDOFPROMPT.to_string(), 200_018),
    ];
    CoreBPE::new(
        tokens.into_iter().zip(0..).collect(),
        specials.into_iter().collect(),
        O200K_BASE_PAT_STR,
    )
    .map_err(|e| e.to_string())
}

/// The tokens in rank order; `None` when a length runs past the end.
fn tokens(mut raw: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut tokens = Vec::with_capacity(200_000);
    while let Some((&len, rest)) = raw.split_first() {
        let (token, rest) = rest.split_at_checked(usize::from(len))?;
        tokens.push(token.to_vec());
        raw = rest;
    }
    Some(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiktoken_rs::Rank;

    /// The pack of a table given in rank order (what `o200k.pack` holds).
    fn pack(tokens: &[Vec<u8>]) -> Vec<u8> {
        let mut raw = Vec::new();
        for token in tokens {
            raw.push(u8::try_from(token.len()).expect("o200k tokens are at most 255 bytes"));
            raw.extend_from_slice(token);
        }
        miniz_oxide::deflate::compress_to_vec_zlib(&raw, 10)
    }

    #[test]
    fn the_pack_is_tiktoken_o200k_base() {
        let reference = tiktoken_rs::o200k_base().unwrap();
        let expected: Vec<Vec<u8>> = (0..199_998 as Rank)
            .map(|rank| reference.decode_bytes(&[rank]).unwrap())
            .collect();
        if std::env::var_os("GYRE_WRITE_O200K_PACK").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/context/o200k.pack");
            std::fs::write(path, pack(&expected)).unwrap();
        }
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib(PACK).unwrap();
        assert!(
            tokens(&raw).unwrap() == expected,
            "o200k.pack differs from tiktoken-rs's table"
        );

        let ours = bpe().unwrap();
        for text in [
            "fn main() { println!(\"héllo, wörld\"); }",
            "  indented\n\ttabs 12345",
            "日本語のテキスト 🚀",
        ] {
            assert_eq!(
                ours.encode_ordinary(text),
                reference.encode_ordinary(text),
                "{text}"
            );
        }
        let special = "a<|endoftext|>b";
        assert_eq!(
            ours.encode_with_special_tokens(special),
            reference.encode_with_special_tokens(special)
        );
    }

    #[test]
    fn a_cut_pack_is_refused() {
        assert_eq!(tokens(&[3, b'a', b'b']), None);
        assert_eq!(
            tokens(&[1, b'a', 2, b'b', b'c']),
            Some(vec![b"a".to_vec(), b"bc".to_vec()])
        );
    }
}
