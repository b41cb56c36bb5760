//! Where the conversation's cache breakpoints go, so that every request
//! reaches the entry the previous one wrote.
//!
//! Anthropic writes a cache entry only at a breakpoint, and a request finds
//! an earlier entry only at one of its own breakpoints or up to about 20
//! blocks before one (its prompt-caching guide, "automatic prefix
//! checking"). gyre's sliding breakpoint sits on the newest message; the
//! previous request's sat on the message before the newest answer. A turn
//! that adds more blocks than the lookback (an answer with a dozen parallel
//! tool calls and their results) would leave that entry out of reach and
//! write the whole prompt again; then the older message gets its breakpoint
//! back, which reads the entry exactly.
//!
//! Trade-off: the extra breakpoint is placed only when the newest one cannot
//! reach the entry, so the common request keeps three breakpoints and its
//! bytes; one more is always within the API's limit of four.

/// Blocks the newest breakpoint may be from the previous entry and still
/// find it, with a margin under the documented "approximately 20".
pub(super) const REACH: usize = 16;

/// Which message, besides the newest, carries a breakpoint: given the number
/// of blocks each message sends, the one the previous request ended with
/// (the one before the newest answer), when the newest breakpoint cannot
/// reach it.
pub(super) fn earlier_breakpoint(blocks: &[usize]) -> Option<usize> {
    let newest = blocks.len().checked_sub(1)?;
    let previous = newest.checked_sub(2)?;
    let between: usize = blocks[previous + 1..].iter().sum();
    (between > REACH && blocks[previous] > 0).then_some(previous)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_turn_needs_no_second_breakpoint() {
        assert_eq!(earlier_breakpoint(&[1, 2, 1]), None);
        assert_eq!(earlier_breakpoint(&[1]), None);
        assert_eq!(earlier_breakpoint(&[1, 2]), None);
        // Text and 7 calls, then 7 results: 15 blocks.
        assert_eq!(earlier_breakpoint(&[1, 8, 7]), None);
    }

    #[test]
    fn a_turn_past_the_lookback_marks_the_previous_end() {
        // Text and 12 calls, then 12 results.
        assert_eq!(earlier_breakpoint(&[3, 1, 2, 1, 13, 12]), Some(3));
        // Text and 8 calls, then 8 results: 17 blocks, past the margin.
        assert_eq!(earlier_breakpoint(&[1, 9, 8]), Some(0));
        assert_eq!(earlier_breakpoint(&[0, 13, 12]), None);
    }
}
