//! The `cache` group's rows: a 200-turn session with 20 KB tool outputs in
//! a 32k and a 200k window, with the mock's prompt cache modelled, priced at
//! Anthropic's published prices — for gyre, gyre with the transcript-form
//! compaction request (issue 20's "measure both"), and two naive strategies
//! (`priced_session`). Each run fails on its own: FAILED rows and its error
//! under the table.

use crate::groups::{outcome, progress};
use crate::priced_session::{self, PRICES, Priced, Strategy};
use crate::report::{Report, Row, Unit, Value};

/// Issue 20's targets: the share of input not served from the cache.
fn uncached_target(window: u64) -> f64 {
    if window >= 200_000 { 0.15 } else { 0.30 }
}

pub fn cache(report: &mut Report) {
    let turns = priced_session::TURNS;
    let mut table = vec![
        "| window | strategy | requests (summaries) | prune steps | compactions | prefix changes | input tokens | from cache | summaries' input from cache | cost |".to_owned(),
        "|---|---|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    for window in priced_session::WINDOWS {
        let label = format!("{}k", window / 1000);
        for strategy in Strategy::ALL {
            if !selected(&label, strategy) {
                continue;
            }
            progress(&format!(
                "{turns}-turn priced session, {label} window, {}",
                strategy.label()
            ));
            let result = outcome(report, priced_session::measure(strategy, window, turns));
            rows(report, &label, window, strategy, result.as_ref());
            if let Some(p) = &result {
                table.push(format!(
                    "| {label} | {} | {} ({}) | {} | {} | {} | {} | {:.1} % | {:.1} % | ${:.2} |",
                    strategy.label(),
                    p.requests,
                    p.summary_requests,
                    p.prune_steps,
                    p.compactions,
                    p.prefix_changes,
                    p.input_tokens,
                    p.cached_share() * 100.0,
                    p.summary_cache_read as f64 * 100.0 / p.summary_input.max(1) as f64,
                    p.cost(&PRICES)
                ));
            }
        }
    }
    report.notes.push(format!(
        "Priced long session (in-process, `src/priced_session.rs`): gyre_core's Agent with a \
         SqliteStore, the builtin tools and the in-process mock (Anthropic wire) with its prompt \
         cache modelled as Anthropic documents it (an entry is written only at a `cache_control` \
         breakpoint; a request reads the longest entry ending at one of its breakpoints or up to \
         20 blocks before one, as `cache_read_input_tokens`, writes from there to its last \
         breakpoint as `cache_creation_input_tokens`, and the rest is plain input), refusing any \
         request over the window. {turns} turns, \
         each but the last a `bash` printing a 20 KB file; max_output_tokens 4096. Prefix \
         changes: main requests that are not a pure append of the previous one. Cost: Claude \
         Sonnet 4.5 prices per MTok — input ${}, cache write ${}, cache read ${}, output ${} \
         (output tokens: the run's reported usage). Strategies: gyre (defaults); gyre with the \
         transcript-form summary request (`cached_compaction = false`); compaction only \
         (pruning off, no step before the compaction line); prune every turn (prune line at its lowest, every prunable output \
         outside the default protected recent part pruned as soon as it is there; it plans no \
         step, so its requests carry no cache points).\n\n{}",
        PRICES.input,
        PRICES.cache_write,
        PRICES.cache_read,
        PRICES.output,
        table.join("\n")
    ));
}

/// Whether `GYRE_BENCH_CACHE_RUNS` (unset: every run) names this run.
fn selected(window: &str, strategy: Strategy) -> bool {
    let Ok(runs) = std::env::var("GYRE_BENCH_CACHE_RUNS") else {
        return true;
    };
    runs.split(',').any(|run| {
        run.split_once(':').is_some_and(|(w, s)| {
            w == window
                && strategy
                    .label()
                    .trim_start_matches("naive: ")
                    .starts_with(s)
        })
    })
}

fn rows(report: &mut Report, label: &str, window: u64, strategy: Strategy, p: Option<&Priced>) {
    let what = |s: &str| {
        format!(
            "{}-turn priced session, {label} window, {}: {s}",
            priced_session::TURNS,
            strategy.label()
        )
    };
    let pick = |f: &dyn Fn(&Priced) -> f64| p.map_or(Value::Failed, |p| Value::MedianOnly(f(p)));
    let requests = match p {
        Some(p) => what(&format!(
            "requests ({} of them summaries)",
            p.summary_requests
        )),
        None => what("requests"),
    };
    report.rows.push(Row::new(
        requests,
        pick(&|p| p.requests as f64),
        Unit::Count,
    ));
    report.rows.push(Row::new(
        what("prune steps"),
        pick(&|p| p.prune_steps as f64),
        Unit::Count,
    ));
    report.rows.push(Row::new(
        what("compactions"),
        pick(&|p| p.compactions as f64),
        Unit::Count,
    ));
    report.rows.push(Row::new(
        what("prefix changes"),
        pick(&|p| p.prefix_changes as f64),
        Unit::Count,
    ));
    report.rows.push(Row::new(
        what("input tokens"),
        pick(&|p| p.input_tokens as f64),
        Unit::Tokens,
    ));
    let mut uncached = Row::new(
        what("input not served from the cache"),
        pick(&|p| 1.0 - p.cached_share()),
        Unit::Percent,
    );
    if strategy == Strategy::Gyre {
        uncached = uncached.target(uncached_target(window));
    }
    report.rows.push(uncached);
    report.rows.push(Row::new(
        what("cost at Anthropic prices"),
        pick(&|p| p.cost(&PRICES)),
        Unit::Dollars,
    ));
}
