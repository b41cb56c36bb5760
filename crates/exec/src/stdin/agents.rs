//! The Agent SDK's own agents (`agents` of `initialize`: name →
//! `{description, prompt, tools?, model?}`) as gyre agent profiles, so the
//! model's `task` tool can start them.
//!
//! Each definition is written as the agent file it amounts to and read by
//! the agent-file parser, so it gets the same checks (name, tools, Claude
//! Code's tool names) and the same defaults as a file in `.gyre/agents`.
//! Claude Code's model aliases (`sonnet`, `opus`, `haiku`, `inherit`) are
//! not model names any provider takes: the agent runs on the session's
//! model instead.

use std::path::Path;

use gyre_core::agents::AgentProfile;
use serde_json::Value;

/// The keys of the SDK's `AgentDefinition` that gyre uses.
const USED_KEYS: [&str; 7] = [
    "description",
    "prompt",
    "tools",
    "model",
    "disallowedTools",
    "maxTurns",
    "permissionMode",
];

/// The model values that mean "a Claude model chosen by alias".
const MODEL_ALIASES: [&str; 4] = ["sonnet", "opus", "haiku", "inherit"];

/// `definition` of the SDK's agent `name` as a profile, or why not (a
/// sentence that starts with the agent's name).
pub(super) fn profile(name: &str, definition: &Value) -> Result<AgentProfile, String> {
    let text = as_agent_file(name, definition).map_err(|why| format!("`{name}` {why}"))?;
    let path = Path::new("sdk-agents").join(format!("{name}.md"));
    let (profile, _ignored) =
        gyre_core::agents::file::parse(&path, &text).map_err(|why| format!("`{name}`: {why}"))?;
    Ok(profile)
}

fn as_agent_file(name: &str, definition: &Value) -> Result<String, String> {
    let Some(fields) = definition.as_object() else {
        return Err("is not an object".into());
    };
    let text = |key: &str| fields.get(key).and_then(Value::as_str).unwrap_or("");
    // JSON strings and arrays are YAML too: no escaping of our own.
    let mut front = format!(
        "name: {}\ndescription: {}\n",
        Value::from(name),
        Value::from(text("description"))
    );
    if let Some(tools) = fields.get("tools").filter(|t| !t.is_null()) {
        if !tools.is_array() {
            return Err("has `tools` that is not a list".into());
        }
        front.push_str(&format!("tools: {tools}\n"));
    }
    // The SDK's camelCase keys that an agent file has under its own names.
    for (sdk, file) in [
        ("disallowedTools", "disallowed_tools"),
        ("maxTurns", "max_turns"),
        ("permissionMode", "permission_mode"),
    ] {
        if let Some(value) = fields.get(sdk).filter(|v| !v.is_null()) {
            front.push_str(&format!("{file}: {value}\n"));
        }
    }
    let unused: Vec<&str> = fields
        .iter()
        .filter(|(k, v)| !v.is_null() && !USED_KEYS.contains(&k.as_str()))
        .map(|(k, _)| k.as_str())
        .collect();
    if !unused.is_empty() {
        eprintln!(
            "gyre: warning: the SDK's agent `{name}`: {} not used by gyre",
            unused.join(", ")
        );
    }
    let model = text("model");
    if !model.is_empty() && !MODEL_ALIASES.contains(&model) {
        front.push_str(&format!("model: {}\n", Value::from(model)));
    }
    Ok(format!("---\n{front}---\n{}\n", text("prompt")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_definition_becomes_a_profile_with_gyres_tool_names() {
        let profile = profile(
            "code-reviewer",
            &json!({"description": "Reviews code: \"carefully\"", "prompt": "You review.\nBe brief.", "tools": ["Read", "Grep"], "model": "sonnet"}),
        )
        .unwrap();
        assert_eq!(profile.name, "code-reviewer");
        assert_eq!(profile.description, "Reviews code: \"carefully\"");
        assert!(profile.prompt.contains("You review.\nBe brief."));
        assert_eq!(
            profile.tools,
            gyre_core::agents::ToolSelection::Named(vec!["read".into(), "grep".into()])
        );
        assert_eq!(profile.model, None, "an alias runs on the session's model");
        let named = profile_of(
            "m",
            json!({"description": "d", "prompt": "p", "model": "gpt-5-mini"}),
        );
        assert_eq!(named.model.as_deref(), Some("gpt-5-mini"));
    }

    fn profile_of(name: &str, definition: Value) -> AgentProfile {
        profile(name, &definition).unwrap()
    }

    #[test]
    fn a_bad_definition_is_named() {
        let error = profile("Bad Name", &json!({"description": "d", "prompt": "p"})).unwrap_err();
        assert!(error.starts_with("`Bad Name`"), "{error}");
        assert!(profile("x", &json!("not an object")).is_err());
        assert!(profile("x", &json!({"tools": "Read"})).is_err());
    }
}
