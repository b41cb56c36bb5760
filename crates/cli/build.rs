//! Link-time settings of the `gyre` binary only (no effect on how any crate
//! is compiled, so no other artifact's fingerprint changes).
//!
//! On Linux with glibc the binary is linked with packed relative relocations
//! (DT_RELR, `-z pack-relative-relocs`, GNU ld 2.38+ / lld 15+, glibc
//! 2.36+): the ~60,000 relative relocations of a position-independent
//! `gyre` take ~20 KB instead of a 1.4 MB `.rela.dyn` that the loader reads,
//! page by page, at every start (issue 17: `--version` time and the
//! file-backed pages of a run). The binary stays position-independent (ASLR
//! kept). The binary then needs glibc 2.36+ where it runs; `GYRE_NO_RELR=1`
//! at build time leaves the option out (an older system, or a binary built
//! to be copied to one).

fn main() {
    println!("cargo::rerun-if-env-changed=GYRE_NO_RELR");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("GYRE_NO_RELR").is_none() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
