//! The `build` group (opt-in: `--only build`, minutes of both cores): a cold
//! `cargo build --release -p gyre-cli` of this source tree, as a new user's
//! first `cargo run --release` does, and the size of the binary it made.
//!
//! Invariants: the build goes to its own target directory (`--build-dir`),
//! which is emptied with `cargo clean` first and never the caller's
//! `CARGO_TARGET_DIR`, so what the developer built is left alone and the
//! figure is a cold build (the registry's downloaded sources are reused: a
//! download is the network, not the build). The child's environment drops
//! `CARGO_*` build settings and `RUSTFLAGS` of the caller's shell, so only
//! the repository's own profile and `.cargo/config.toml` apply. It uses every
//! core (cargo's default jobs); the header gives nproc and the load, and
//! anything else running inflates the wall time.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, ensure};

use crate::args::Options;
use crate::groups::{outcome, progress};
use crate::report::{Report, Row, Unit, Value};
use crate::runner::{ExitKind, Measured, run_measured};

/// Issue 17's target for a cold release build on 2 cores.
const COLD_BUILD_TARGET_S: f64 = 6.0 * 60.0;
/// A build that has not finished by then is killed and reported as failed.
const BUILD_LIMIT: Duration = Duration::from_secs(60 * 60);
/// Variables of the caller's shell that would change what is built or how.
const BUILD_VARIABLES: [&str; 5] = [
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_JOBS",
    "CARGO_INCREMENTAL",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
];

pub fn build(report: &mut Report, options: &Options) {
    progress(&format!(
        "cold `cargo build --release -p gyre-cli` into {} (cargo clean first; minutes)",
        options.build_dir.display()
    ));
    let built = outcome(report, cold_build(&options.build_dir));
    let value = |f: fn(&Built) -> f64| {
        built
            .as_ref()
            .map_or(Value::Failed, |b| Value::MedianOnly(f(b)))
    };
    report.rows.push(
        Row::new(
            "cold `cargo build --release -p gyre-cli`: wall",
            value(|b| b.measured.wall.as_secs_f64()),
            Unit::Seconds,
        )
        .target(COLD_BUILD_TARGET_S),
    );
    report.rows.push(Row::new(
        "cold `cargo build --release -p gyre-cli`: CPU (user+sys)",
        value(|b| b.measured.cpu.as_secs_f64()),
        Unit::Seconds,
    ));
    report.rows.push(Row::new(
        "cold `cargo build --release -p gyre-cli`: its binary",
        value(|b| b.binary_bytes as f64 / (1024.0 * 1024.0)),
        Unit::Mebibytes,
    ));
    report.notes.push(format!(
        "Cold build (one run, no warm-up): `cargo clean` then `cargo build --release -p \
         gyre-cli --locked` with CARGO_TARGET_DIR={} and the caller's RUSTFLAGS/CARGO_* build \
         variables removed; dependencies' sources already downloaded. Wall from spawn to exit; \
         CPU: user+sys of cargo and every rustc, cc and build script it waited for (`wait4`). \
         It uses all cores: other work on the machine inflates the wall time.",
        options.build_dir.display()
    ));
}

struct Built {
    measured: Measured,
    binary_bytes: u64,
}

fn cold_build(dir: &Path) -> anyhow::Result<Built> {
    let root = workspace_root()?;
    let log = dir.with_extension("log");
    let clean = cargo(&root, dir)
        .arg("clean")
        .status()
        .context("cannot run `cargo clean`")?;
    ensure!(clean.success(), "`cargo clean` in {} failed", dir.display());
    let output = File::create(&log).context("cannot create the build log")?;
    let mut command = cargo(&root, dir);
    command
        .args(["build", "--release", "-p", "gyre-cli", "--locked"])
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output);
    let measured = run_measured(&mut command, BUILD_LIMIT)?;
    ensure!(
        measured.exit == ExitKind::Code(0),
        "the build ended with {}; its output is in {}",
        measured.exit,
        log.display()
    );
    let binary = dir.join("release").join("gyre");
    let binary_bytes = std::fs::metadata(&binary)
        .with_context(|| format!("the build made no {}", binary.display()))?
        .len();
    Ok(Built {
        measured,
        binary_bytes,
    })
}

/// `cargo` in the workspace root, building into `dir` only.
fn cargo(root: &Path, dir: &Path) -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(root);
    for key in BUILD_VARIABLES {
        command.env_remove(key);
    }
    command.env("CARGO_TARGET_DIR", dir);
    command
}

/// The repository this gyre-bench was built from (bench/ is one of its
/// members).
fn workspace_root() -> anyhow::Result<PathBuf> {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = bench.parent().context("bench/ has no parent")?;
    ensure!(
        root.join("Cargo.toml").is_file() && root.join("crates").is_dir(),
        "{} is not the gyre workspace",
        root.display()
    );
    Ok(root.to_path_buf())
}
