//! Which step to take once the context passes its prune line, chosen by
//! price: each step is priced as the provider bills it with a prompt cache,
//! and the one with the lowest cost per turn over the cycle it starts wins.
//!
//! The price model (shares of the input price, Anthropic's: a cache read is
//! 0.1, a cache write 1.25, output 5; OpenAI and Gemini bill no write
//! premium, so this errs towards fewer steps there):
//! - a turn between steps is a pure append: it reads the whole prompt from
//!   the cache and writes the new round, whatever the strategy;
//! - a prune step rewrites everything after its change point (the first
//!   output it replaces) at the write price, less the new round that an
//!   append would write anyway;
//! - a compaction reads the conversation for its summary request (from the
//!   cache in the cached form), writes the instruction, pays the summary as
//!   output, then writes the new short prompt (the summary and the kept
//!   turns, less the new round).
//!
//! A step that leaves `post` tokens and costs `cost` starts a cycle of
//! `n` appends, each reading about `post + round * i`; the cost per turn
//! `cost / n + read * (post + round * (n - 1) / 2)` is lowest at
//! `n* = sqrt(2 cost / (read * round))`, so the step is taken once the
//! context reaches `post + n* * round` (never before the prune line, never
//! after the next round would pass the compaction line). Each cycle is
//! planned for at least [`MIN_ROUNDS`] rounds, and a step whose cycle
//! would hold fewer than [`MIN_REQUESTS`] requests (its own, the appends,
//! a compaction's summary request) is taken only when no step can do
//! better (then the longest cycle wins): steps stay at most one request in
//! four where the window allows it, even when a step is cheap. In a small
//! window that costs a little against pruning the newest-but-one output at
//! every request (whose change point is always just before the newest
//! round), see bench/RESULTS.md.
//!
//! Pure: no IO, no session; `run::context` gathers the figures.

/// Shares of the input price.
pub(crate) const READ: f64 = 0.1;
pub(crate) const WRITE: f64 = 1.25;
pub(crate) const OUTPUT: f64 = 5.0;
/// The shortest cycle a step is planned for, in rounds like the latest one.
pub(crate) const MIN_ROUNDS: f64 = 3.0;
/// Requests per step a step must make room for to be preferred.
pub(crate) const MIN_REQUESTS: u64 = 4;

/// A step that could be taken now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate {
    /// Estimated prompt tokens after it.
    pub post: u64,
    /// Its price beyond a pure append, in input tokens.
    pub cost: f64,
    /// Requests it sends besides the main ones (a summary request).
    pub extra_requests: u64,
}

/// Where the context stands before a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pressure {
    pub used: u64,
    /// Tokens the latest round added: what the next is expected to add.
    pub round: u64,
    pub prune_at: u64,
    pub compact_at: u64,
}

/// What the policy says to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    None,
    Prune,
    Compact,
}

/// The cycle a candidate starts: the line at which it is taken and its
/// cost per turn.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cycle {
    act_at: u64,
    per_turn: f64,
    /// Requests per step: the step's own, the appends, the extra ones.
    requests: u64,
}

impl Pressure {
    /// Whether the next round would pass the compaction line.
    pub fn must_act(&self) -> bool {
        self.used + self.round > self.compact_at
    }

    fn cycle(&self, step: Candidate) -> Cycle {
        let round = self.round.max(1) as f64;
        let best = (2.0 * step.cost.max(0.0) / (READ * round))
            .sqrt()
            .max(MIN_ROUNDS);
        let latest = self.compact_at.saturating_sub(self.round);
        let act_at = ((step.post as f64 + best * round) as u64)
            .max(self.prune_at)
            .min(latest.max(self.prune_at));
        let turns = (act_at.saturating_sub(step.post) as f64 / round).max(1.0);
        let appends = act_at.saturating_sub(step.post) / self.round.max(1);
        Cycle {
            act_at,
            requests: 1 + appends + step.extra_requests,
            per_turn: step.cost / turns + READ * (step.post as f64 + round * (turns - 1.0) / 2.0),
        }
    }

    /// The step to take now: the cheaper candidate per turn among those
    /// whose cycle holds [`MIN_REQUESTS`] (when none does, the one with the
    /// longest cycle), once the context
    /// reaches its line; a step that leaves no room for the next round is
    /// taken only when one must be.
    pub fn choose(&self, prune: Option<Candidate>, compact: Option<Candidate>) -> Choice {
        let room = |c: &Candidate| c.post + self.round <= self.compact_at;
        let options: Vec<(Choice, Cycle)> = [
            prune.filter(room).map(|c| (Choice::Prune, self.cycle(c))),
            compact
                .filter(room)
                .map(|c| (Choice::Compact, self.cycle(c))),
        ]
        .into_iter()
        .flatten()
        .collect();
        let long = options.iter().any(|(_, c)| c.requests >= MIN_REQUESTS);
        let best = if long {
            options
                .into_iter()
                .filter(|(_, c)| c.requests >= MIN_REQUESTS)
                .min_by(|a, b| a.1.per_turn.total_cmp(&b.1.per_turn))
        } else {
            // Every cycle is short: the one with the fewest steps per
            // request, the cheaper of equals.
            options.into_iter().min_by(|a, b| {
                b.1.requests
                    .cmp(&a.1.requests)
                    .then(a.1.per_turn.total_cmp(&b.1.per_turn))
            })
        };
        match best {
            Some((choice, cycle)) if self.must_act() || self.used >= cycle.act_at => choice,
            Some(_) => Choice::None,
            None if self.must_act() => match (compact, prune) {
                (Some(_), _) => Choice::Compact,
                (None, Some(_)) => Choice::Prune,
                (None, None) => Choice::None,
            },
            None => Choice::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(post: u64, cost: f64, extra_requests: u64) -> Candidate {
        Candidate {
            post,
            cost,
            extra_requests,
        }
    }

    fn pressure(used: u64, round: u64) -> Pressure {
        Pressure {
            used,
            round,
            prune_at: 134_000,
            compact_at: 172_000,
        }
    }

    #[test]
    fn a_large_window_steps_at_the_prune_line_to_the_cheaper_cycle() {
        // 200k window, 5k rounds: a prune that rewrites 38k protected
        // tokens against a compaction to 25k whose summary reads the cache.
        let prune = step(60_000, WRITE * 38_000.0, 0);
        let compact = step(
            25_000,
            READ * 134_000.0 + WRITE * 20_000.0 + OUTPUT * 1_000.0,
            1,
        );
        assert_eq!(
            pressure(120_000, 5_000).choose(Some(prune), Some(compact)),
            Choice::None
        );
        assert_eq!(
            pressure(134_000, 5_000).choose(Some(prune), Some(compact)),
            Choice::Compact
        );
        // A prune that rewrites little and frees much wins.
        let cheap = step(20_000, WRITE * 2_000.0, 0);
        assert_eq!(
            pressure(134_000, 5_000).choose(Some(cheap), Some(compact)),
            Choice::Prune
        );
    }

    #[test]
    fn a_step_that_leaves_no_room_is_taken_only_when_it_must() {
        let useless = step(170_000, 0.0, 0);
        assert_eq!(
            pressure(150_000, 5_000).choose(Some(useless), None),
            Choice::None
        );
        assert_eq!(
            pressure(168_000, 5_000).choose(Some(useless), None),
            Choice::Prune
        );
        let compact = step(170_000, 1.0, 1);
        assert_eq!(
            pressure(168_000, 5_000).choose(Some(useless), Some(compact)),
            Choice::Compact
        );
        assert_eq!(pressure(168_000, 5_000).choose(None, None), Choice::None);
    }

    #[test]
    fn steps_wait_for_a_cycle_of_several_rounds() {
        // A small window: a free prune is still not taken every turn.
        let p = Pressure {
            used: 10_500,
            round: 2_000,
            prune_at: 10_000,
            compact_at: 13_000,
        };
        let free = step(4_000, 0.0, 0);
        assert_eq!(p.choose(Some(free), None), Choice::Prune);
        let full = step(9_000, 0.0, 0);
        // 9k + 3 rounds is past the last line: taken only when it must be.
        assert_eq!(p.choose(Some(full), None), Choice::None);
        let p = Pressure { used: 11_500, ..p };
        assert_eq!(p.choose(Some(full), None), Choice::Prune);
    }

    #[test]
    fn a_step_with_room_for_four_requests_is_preferred_to_a_cheaper_one() {
        // 16k window, 2k rounds: a free prune leaves room for three
        // requests, a compaction for three and its summary request.
        let p = Pressure {
            used: 11_200,
            round: 2_000,
            prune_at: 10_000,
            compact_at: 13_000,
        };
        let prune = step(6_000, 0.0, 0);
        let compact = step(5_000, 5_000.0, 1);
        assert_eq!(p.choose(Some(prune), Some(compact)), Choice::Compact);
        // Neither makes room for four: the longer cycle, then the cheaper.
        let compact = step(7_500, 5_000.0, 1);
        assert_eq!(p.choose(Some(prune), Some(compact)), Choice::Prune);
        let shallow = step(8_000, 0.0, 0);
        assert_eq!(p.choose(Some(shallow), Some(compact)), Choice::Compact);
        let other = step(6_000, 100.0, 0);
        assert_eq!(p.choose(Some(prune), Some(other)), Choice::Prune);
    }
}
