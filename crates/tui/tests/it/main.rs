//! gyre-tui's tests: the view drawn into ratatui's `TestBackend`, from real
//! `gyre_protocol` events.

mod sizes;
