use super::*;
use crate::flags::Flags;

/// Nothing configured: `resolve` gives [`Settings::default`]'s values,
/// so that every default has one place (the demo and tests rely on it).
/// A user config file on the machine would change this; the test
/// machines have none.
#[test]
fn a_run_with_nothing_configured_gets_the_defaults() {
    let workspace = tempfile::tempdir().unwrap();
    let flags = Flags {
        provider: Some("ollama".into()),
        model: Some("a-model-no-catalogue-knows".into()),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        cwd: Some(workspace.path().to_path_buf()),
        ..Flags::default()
    };
    let resolved = Settings::resolve(&flags).unwrap();
    let defaults = Settings::default();
    assert_eq!(resolved.max_output_tokens, defaults.max_output_tokens);
    assert_eq!(
        resolved.max_stop_continuations,
        defaults.max_stop_continuations
    );
    assert_eq!(resolved.checkpoints, defaults.checkpoints);
    assert_eq!(resolved.default_agent, defaults.default_agent);
    assert_eq!(resolved.output_format, defaults.output_format);
    assert_eq!(resolved.retry, defaults.retry);
    assert_eq!(resolved.loop_guard, defaults.loop_guard);
    assert_eq!(resolved.subagents, defaults.subagents);
    assert_eq!(resolved.sandbox, defaults.sandbox);
    assert_eq!(resolved.session, defaults.session);
    assert_eq!(resolved.project_mcp, defaults.project_mcp);
    assert_eq!(resolved.max_turns, defaults.max_turns);
    // Core's defaults, not restated.
    let core = AgentConfig::new(String::new(), String::new());
    assert_eq!(defaults.max_output_tokens, core.max_output_tokens);
    assert_eq!(defaults.max_stop_continuations, core.max_stop_continuations);
}

#[test]
fn the_output_limit_is_the_config_s_else_the_catalogue_s_capped() {
    assert_eq!(max_output_tokens(Some(123), "claude-sonnet-4-5", 7), 123);
    assert_eq!(max_output_tokens(None, "no-such-model", 7), 7);
    let catalogued = max_output_tokens(None, "claude-sonnet-4-5", 7);
    assert!(catalogued > 7 && catalogued <= CATALOGUED_OUTPUT_CAP);
}
