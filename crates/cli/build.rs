//! Link-time settings of the `gyre` binary only (no effect on how any crate
//! is compiled, so no other artifact's fingerprint changes).
//!
//! On x86_64 Linux with glibc, where rustc (1.90+) links with its own
//! rust-lld unless told otherwise:
//! - packed relative relocations (DT_RELR, `-z pack-relative-relocs`): the
//!   ~60,000 relative relocations of a position-independent `gyre` take
//!   ~20 KB instead of a 1.4 MB `.rela.dyn` that the loader reads, page by
//!   page, at every start (issue 17: `--version` time and the file-backed
//!   pages of a run). The binary stays position-independent (ASLR kept) and
//!   then needs glibc 2.36+ where it runs.
//! - identical code folding (`--icf=all`): the many byte-identical
//!   monomorphised functions (drop glue, futures' polls) are kept once.
//!   Rust promises no distinct addresses for distinct functions, so this
//!   changes nothing a program may rely on.
//! - `-O2`: lld also merges the tails of identical constant strings.
//!
//! Neither is passed when a linker or linker flags of one's own are
//! configured (`RUSTC_LINKER`, `-C linker`/`-fuse-ld` in the rustflags): GNU
//! ld has no `--icf`. `GYRE_PLAIN_LINK=1` leaves both out (an older system,
//! or a binary built to be copied to one).

fn main() {
    println!("cargo::rerun-if-env-changed=GYRE_PLAIN_LINK");
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    let own_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || ["linker", "fuse-ld", "link-self-contained"]
            .iter()
            .any(|flag| var("CARGO_ENCODED_RUSTFLAGS").contains(flag));
    let rust_lld_default = var("TARGET") == "x86_64-unknown-linux-gnu";
    if rust_lld_default && !own_linker && std::env::var_os("GYRE_PLAIN_LINK").is_none() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        println!("cargo::rustc-link-arg-bins=-Wl,--icf=all");
        println!("cargo::rustc-link-arg-bins=-Wl,-O2");
    }
}
