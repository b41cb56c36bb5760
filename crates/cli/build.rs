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
//! - in release builds, the functions a headless run executes placed
//!   together (`--symbol-ordering-file=startup.order`): start-up and a run
//!   touch ~1.9 MB of the 13 MB of code, spread over all of it, and the
//!   kernel maps 64 KiB around every page fault, so without the order
//!   10.5 MB of code was resident; with it a 3-step run's peak RSS falls
//!   from 16.2 to 14.0 MB. The list comes from a profile
//!   (`bash bench/startup-order.sh` writes it anew); a name it lists that
//!   the build no longer has is skipped silently, so a stale list costs
//!   memory, never correctness (the bench's RSS row shows it).
//!   `GYRE_LINK_MAP=PATH` writes the linker's map, which that script reads.
//!
//! None is passed when a linker or linker flags of one's own are configured
//! (`RUSTC_LINKER`, `-C linker`/`-fuse-ld` in the rustflags): GNU ld has no
//! `--icf`. `GYRE_PLAIN_LINK=1` leaves them all out (a PIE, for a packager
//! who wants one, or a linker of one's own).

fn main() {
    println!("cargo::rerun-if-env-changed=GYRE_PLAIN_LINK");
    println!("cargo::rerun-if-changed=startup.order");
    println!("cargo::rerun-if-env-changed=GYRE_LINK_MAP");
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
        if let Some(map) = std::env::var_os("GYRE_LINK_MAP") {
            let map = map.to_string_lossy();
            println!("cargo::rustc-link-arg-bins=-Wl,-Map={map}");
        }
        if var("PROFILE") == "release" {
            let order = format!("{}/startup.order", var("CARGO_MANIFEST_DIR"));
            println!("cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={order}");
            println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}
