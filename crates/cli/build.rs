//! Link-time settings of the `gyre` binary only (no effect on how any crate
//! is compiled, so no other artifact's fingerprint changes).
//!
//! On x86_64 Linux with glibc, where rustc (1.90+) links with its own
//! rust-lld unless told otherwise:
//! - a position-dependent executable (`-no-pie`): a position-independent
//!   `gyre` carries ~60,000 relative relocations that the loader applies at
//!   every start, writing a private copy of each page of `.data.rel.ro` and
//!   the GOT it touches (~300 pages). Without them `gyre --version` takes
//!   1.7 ms instead of 2.3–3.6 ms and a run has ~1 MB less of anonymous
//!   memory (issue 17; bench/RESULTS.md). The cost is ASLR of the
//!   executable's own image (shared libraries, heap and stacks stay
//!   randomised); a program whose job is to run the commands a model asks
//!   for gains little from it. `GYRE_PLAIN_LINK=1` builds a PIE again.
//! - identical code folding (`--icf=all`): the many byte-identical
//!   monomorphised functions (drop glue, futures' polls) are kept once.
//!   Rust promises no distinct addresses for distinct functions, so this
//!   changes nothing a program may rely on.
//! - `-O2`: lld also merges the tails of identical constant strings.
//!
//! None is passed when a linker or linker flags of one's own are configured
//! (`RUSTC_LINKER`, `-C linker`/`-fuse-ld` in the rustflags): GNU ld has no
//! `--icf`. `GYRE_PLAIN_LINK=1` leaves them all out (a PIE, for a packager
//! who wants one, or a linker of one's own).

fn main() {
    println!("cargo::rerun-if-env-changed=GYRE_PLAIN_LINK");
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    let own_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || ["linker", "fuse-ld", "link-self-contained"]
            .iter()
            .any(|flag| var("CARGO_ENCODED_RUSTFLAGS").contains(flag));
    let rust_lld_default = var("TARGET") == "x86_64-unknown-linux-gnu";
    if rust_lld_default && !own_linker && std::env::var_os("GYRE_PLAIN_LINK").is_none() {
        println!("cargo::rustc-link-arg-bins=-Wl,--icf=all");
        println!("cargo::rustc-link-arg-bins=-Wl,-O2");
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
