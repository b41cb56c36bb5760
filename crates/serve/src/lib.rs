//! `gyre serve`: gyre's sessions over HTTP, with each session's updates as
//! Server-Sent Events (README "gyre serve"; `GET /openapi.json`, whose
//! document is written in `openapi.rs`).
//!
//! This crate holds the HTTP frontend only: routes, auth, the browser
//! guard, SSE and the sessions the server keeps open. Settings, the store
//! and the agents come from `gyre-host` ([`Host`]); clap stays in the
//! binary, which converts its flags into [`Options`]. The only crate that
//! names axum.
//!
//! Invariants:
//! - 127.0.0.1 by default; bound elsewhere it refuses to start without a
//!   bearer token (`auth.rs`). Once listening it says so in one line on
//!   stderr: `gyre serve listening on http://ADDR:PORT`.
//! - Web pages cannot use it (`guard.rs`): without a token, only requests
//!   naming a loopback host and coming from no other origin pass; request
//!   bodies must be `application/json` (a browser's cross-origin "simple
//!   request" never is).
//! - Sessions live in the store every command uses (`GYRE_DATABASE_URL`,
//!   else `$GYRE_HOME/sessions.db`), so several `gyre serve` hosts on one
//!   PostgreSQL database see each other's sessions; the store's session
//!   lock serialises the runs of one session across hosts (a run waits,
//!   saying `session_busy`).
//! - Ctrl-C or SIGTERM stops it: new work is refused (503), every run is
//!   cancelled and waited for (each records how it ended) for at most
//!   [`CLOSE_LIMIT`], then event streams end and the process exits 0. A
//!   second signal exits at once (130).
//!
//! Unlike the other commands it runs on a multi-threaded runtime: many
//! sessions run at once, and their runs, requests and streams spread over
//! the cores.

mod auth;
mod error;
mod guard;
mod openapi;
mod routes;
mod sse;
mod state;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gyre_core::Approvals;

use gyre_host::exit::{CANCELLED, Exit, SUCCESS};
use gyre_host::{Flags, Host};
use state::AppState;

/// How long the runs may take to end after a stop signal.
pub const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// How long open connections may take to end after that.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// `gyre serve`'s options.
#[derive(Debug)]
pub struct Options {
    /// The port (0: any free one; the address is said on stderr).
    pub port: u16,
    /// The address to listen on; anything but loopback needs a token.
    pub host: IpAddr,
    /// The variable holding the bearer token (default: GYRE_SERVER_TOKEN,
    /// when set).
    pub token_env: Option<String>,
    /// The flags of the runs; `cwd` is the workspace of sessions created
    /// without one.
    pub flags: Flags,
}

pub fn run(options: Options) -> Result<i32, Exit> {
    refuse_run_only_flags(&options.flags)?;
    let token = auth::token_for(options.host, options.token_env.as_deref(), |var| {
        std::env::var(var).ok()
    })?;
    let home = gyre_host::home::gyre_home()?;
    gyre_host::home::init_logging(&home);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Exit::failure(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(serve(options, token, &home))
}

/// Flags that choose one run's session or output mean nothing here: those
/// of [`Flags::one_run_flag`] (one list, shared with the other commands),
/// and the permission prompt tool (permissions are answered over the API).
fn refuse_run_only_flags(args: &Flags) -> Result<(), Exit> {
    let flag = args.one_run_flag().or_else(|| {
        args.permission_prompt_tool
            .is_some()
            .then_some("--permission-prompt-tool")
    });
    match flag {
        Some(flag) => Err(Exit::usage(format!(
            "{flag} is for `gyre run`; gyre serve takes the session and the prompt in each request (see /openapi.json)"
        ))),
        None => Ok(()),
    }
}

async fn serve(options: Options, token: Option<auth::Token>, home: &Path) -> Result<i32, Exit> {
    let host = Host::open(home, options.flags, Approvals::Interactive).await?;
    let state = Arc::new(AppState::new(host));
    let addr = SocketAddr::new(options.host, options.port);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Exit::usage(format!(
            "cannot listen on {addr}: {e}; choose another --port"
        ))
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| Exit::failure(format!("cannot read the address listened on: {e}")))?;
    let app = routes::router(state.clone(), token, local);
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(state.streams_end.clone().cancelled_owned());
    let serving = tokio::spawn(async move { server.await });
    eprintln!("gyre serve listening on http://{local}");
    tracing::info!(%local, "gyre serve listening");

    let sweeper = tokio::spawn(close_idle_sessions(state.clone()));
    stop_signal().await?;
    tokio::spawn(async {
        if stop_signal().await.is_ok() {
            std::process::exit(CANCELLED);
        }
    });
    let busy = state.close_all(CLOSE_LIMIT).await;
    tracing::info!(busy, "gyre serve stopping: runs closed");
    state.streams_end.cancel();
    sweeper.abort();
    match tokio::time::timeout(DRAIN_LIMIT, serving).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!("the server ended with an error: {e}"),
        Ok(Err(e)) => tracing::warn!("the server task failed: {e}"),
        Err(_) => tracing::warn!("connections still open {DRAIN_LIMIT:?} after the shutdown"),
    }
    Ok(SUCCESS)
}

/// Every [`state::SWEEP_EVERY`], closes the sessions idle for long.
async fn close_idle_sessions(state: Arc<AppState>) {
    let mut every = tokio::time::interval(state::SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        state.close_idle(std::time::Instant::now());
    }
}

/// Ctrl-C or SIGTERM.
async fn stop_signal() -> Result<(), Exit> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|e| Exit::failure(format!("cannot listen for SIGTERM: {e}")))?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => {
            result.map_err(|e| Exit::failure(format!("cannot listen for Ctrl-C: {e}")))
        }
        _ = terminate.recv() => Ok(()),
    }
}
