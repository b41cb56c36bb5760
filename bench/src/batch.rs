//! A batch of 10 read-only tool calls run the way the scheduler runs a turn's
//! read-only calls (concurrently, at most 5 at once), against the same calls
//! run one after another.
//!
//! The calls, on the generated tree (see `tree`), in this order: 5 × (`grep`
//! for the tree's pattern in content mode under one top directory, ~5,000
//! files each; `read` of one small file under another). The greps dominate;
//! the reads are ~1 KB files.
//!
//! Invariants:
//! - Concurrent: each call is a `tokio::spawn`ed task that takes a permit of a
//!   5-permit semaphore before running the tool, as `core`'s scheduler does
//!   (default `read_only_concurrency` 5), on a current-thread runtime like the
//!   CLI's; the tools do their work on tokio's blocking pool, so up to 5 run in
//!   parallel on the machine's cores. Serial: the same calls awaited one by
//!   one. Neither includes the model, the permission check or the loop.
//! - The clock covers the whole batch: from before the first call starts to
//!   the last result in hand. CPU is this process's user+sys over the same
//!   span (all threads), so CPU / wall tells how many cores the batch used.
//! - Every run is checked: every call succeeds and its output equals the
//!   serial warm-up run's output for that call.
//! - Concurrent and serial runs alternate, so drift on a busy machine affects
//!   both alike. One warm-up run of each, not recorded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::inproc::{self, Tools, process_cpu};
use crate::tree::PATTERN;

/// The scheduler's default limit of concurrent read-only calls.
pub const CONCURRENCY: usize = 5;

/// The 10 calls.
pub fn calls() -> Vec<(&'static str, Value)> {
    (1..=5)
        .flat_map(|k| {
            [
                (
                    "grep",
                    json!({"pattern": PATTERN, "path": format!("d{k:02}"), "output_mode": "content"}),
                ),
                (
                    "read",
                    json!({"file_path": format!("d{:02}/s05/f010.rs", k + 5)}),
                ),
            ]
        })
        .collect()
}

/// Wall times of the batch run concurrently and serially.
#[derive(Debug, Default, Clone)]
pub struct BatchSamples {
    pub concurrent_ms: Vec<f64>,
    pub serial_ms: Vec<f64>,
    /// This process's user+sys CPU over each batch.
    pub concurrent_cpu_ms: Vec<f64>,
    pub serial_cpu_ms: Vec<f64>,
}

/// Runs the batch both ways `runs` times each (after a warm-up of each).
pub fn measure(tools: &Tools, runs: usize) -> anyhow::Result<BatchSamples> {
    let calls = calls();
    let (_, reference) = serial(tools, &calls).context("batch, serial warm-up run")?;
    for (i, (name, output)) in calls.iter().zip(&reference).enumerate() {
        ensure!(
            !output.is_empty() && !output.starts_with("No matches"),
            "batch call {i} ({}) found nothing: {output}",
            name.0
        );
    }
    let mut samples = BatchSamples::default();
    for run in 0..=runs {
        let label = |how: &str| {
            if run == 0 {
                format!("batch, {how} warm-up run")
            } else {
                format!("batch, {how} run {run} of {runs}")
            }
        };
        let cpu = process_cpu();
        let (wall, outputs) = concurrent(tools, &calls).context(label("concurrent"))?;
        let cpu = process_cpu().saturating_sub(cpu);
        ensure!(
            outputs == reference,
            "{}: the outputs differ from the serial run's",
            label("concurrent")
        );
        if run > 0 {
            samples.concurrent_ms.push(wall.as_secs_f64() * 1e3);
            samples.concurrent_cpu_ms.push(cpu.as_secs_f64() * 1e3);
        }
        let cpu = process_cpu();
        let (wall, outputs) = serial(tools, &calls).context(label("serial"))?;
        let cpu = process_cpu().saturating_sub(cpu);
        ensure!(
            outputs == reference,
            "{}: the outputs differ from the warm-up run's",
            label("serial")
        );
        if run > 0 {
            samples.serial_ms.push(wall.as_secs_f64() * 1e3);
            samples.serial_cpu_ms.push(cpu.as_secs_f64() * 1e3);
        }
    }
    Ok(samples)
}

fn serial(tools: &Tools, calls: &[(&str, Value)]) -> anyhow::Result<(Duration, Vec<String>)> {
    tools.runtime.block_on(async {
        let start = Instant::now();
        let mut outputs = Vec::with_capacity(calls.len());
        for (name, arguments) in calls {
            outputs.push(inproc::run(&tools.registry, &tools.ctx, name, arguments.clone()).await);
        }
        let elapsed = start.elapsed();
        let texts = outputs
            .into_iter()
            .map(|o| o.map(|o| inproc::text(&o)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok((elapsed, texts))
    })
}

fn concurrent(tools: &Tools, calls: &[(&str, Value)]) -> anyhow::Result<(Duration, Vec<String>)> {
    tools.runtime.block_on(async {
        let permits = Arc::new(Semaphore::new(CONCURRENCY));
        let start = Instant::now();
        let tasks: Vec<_> = calls
            .iter()
            .map(|(name, arguments)| {
                let (registry, ctx) = (tools.registry.clone(), tools.ctx.clone());
                let (name, arguments) = (name.to_string(), arguments.clone());
                let permits = permits.clone();
                tokio::spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    inproc::run(&registry, &ctx, &name, arguments).await
                })
            })
            .collect();
        let outputs = futures::future::join_all(tasks).await;
        let elapsed = start.elapsed();
        let texts = outputs
            .into_iter()
            .map(|joined| {
                joined
                    .context("a batch task panicked")?
                    .map(|o| inproc::text(&o))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok((elapsed, texts))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_tree_runs_both_ways_with_equal_outputs() {
        let dir = tempfile::tempdir().expect("temp dir");
        for k in 1..=10 {
            let sub = dir.path().join(format!("d{k:02}/s05"));
            std::fs::create_dir_all(&sub).expect("dirs");
            std::fs::write(sub.join("f010.rs"), format!("let x = needle_{k}(y);\n"))
                .expect("write");
        }
        let tools = Tools::new(dir.path()).expect("tools");
        let samples = measure(&tools, 1).expect("runs");
        assert_eq!(samples.concurrent_ms.len(), 1);
        assert_eq!(samples.serial_ms.len(), 1);
        assert_eq!(samples.serial_cpu_ms.len(), 1);
    }
}
