//! Ids gyre makes: time-ordered (uuid v7), so sorting by id sorts by
//! creation, and the short form people read ([`short_id`]). A leaf module: it depends on nothing else in the crate, so
//! sessions, messages, locks and checkpoints all take ids from here without
//! depending on each other.

/// A new time-ordered id.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Characters of an id people read: a v7 id's first 13 (`0192f1c4-7a3b`),
/// its creation time to the millisecond. Eight would be a timestamp to the
/// minute only (sessions made minutes apart look alike); the random tail is
/// no prefix, and a prefix is what `--resume` and `gyre sessions` accept.
pub const SHORT_ID_CHARS: usize = 13;

/// The short form of `id` wherever a person reads one (the `/resume`
/// picker, notices, the TUI's exit line, `gyre sessions show`): its first
/// [`SHORT_ID_CHARS`] characters, or all of a shorter id.
pub fn short_id(id: &str) -> &str {
    match id.char_indices().nth(SHORT_ID_CHARS) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_form_tells_sessions_made_a_millisecond_apart_apart() {
        let first = new_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = new_id();
        assert_eq!(short_id(&first).len(), SHORT_ID_CHARS);
        assert!(first.starts_with(short_id(&first)));
        assert_ne!(short_id(&first), short_id(&second));
        assert_eq!(short_id("kid-1"), "kid-1");
        assert_eq!(
            short_id("0192f1c4-7a3b-7def-8123-456789abcdef"),
            "0192f1c4-7a3b"
        );
    }
}
