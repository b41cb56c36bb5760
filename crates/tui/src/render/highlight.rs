//! Code block highlighting with syntect (pure-Rust regex engine).
//!
//! The syntax set and the theme are loaded once, lazily, on the first
//! highlighted block (`OnceLock`): start-up pays nothing for them.
