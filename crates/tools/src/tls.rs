//! The process's one TLS crypto provider.
//!
//! reqwest is built with `rustls-no-provider` (ring instead of aws-lc-rs: no
//! cmake C build on every crate's critical path), so a rustls provider must
//! be installed before the first client is built, or reqwest panics. Every
//! place in gyre that builds a reqwest client calls
//! [`install_crypto_provider`] first; it is cheap after the first call.

use std::sync::Once;

/// Installs ring as the process's default rustls provider (once). A
/// provider that someone else installed first is kept.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means a provider is already installed: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
