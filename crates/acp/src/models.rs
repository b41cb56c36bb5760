//! Model selection for editors: the session's model as ACP's stable
//! session config option `model` (a select of category `model`, in
//! `session/new` and `session/load`, set by `session/set_config_option`,
//! announced by `config_option_update`).
//!
//! Invariants:
//! - The values are `gyre_host::models::known`, the list the TUI's
//!   `/model` offers; the current value is the model the session's agent
//!   runs with, listed first when the list lacks it (an agent's own model).
//! - Only a listed value is taken: an unknown config id or value is an
//!   invalid-params error naming what is offered, so a typo never switches
//!   to a model the server lacks. A value applies from the session's next
//!   prompt (a running prompt keeps the agent it started with).

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};

/// The id of the model option.
pub const MODEL: &str = "model";

/// The session's config options: the model, `current` of `known`.
pub fn options(known: &[String], current: &str) -> Vec<SessionConfigOption> {
    let mut values: Vec<SessionConfigSelectOption> = Vec::with_capacity(known.len() + 1);
    if !known.iter().any(|m| m == current) {
        values.push(SessionConfigSelectOption::new(
            current.to_string(),
            current.to_string(),
        ));
    }
    values.extend(
        known
            .iter()
            .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone())),
    );
    vec![
        SessionConfigOption::select(MODEL, "Model", current.to_string(), values)
            .description("The model the session's next prompts run on".to_string())
            .category(SessionConfigOptionCategory::Model),
    ]
}

/// The model `session/set_config_option` chose, or why it is refused.
pub fn chosen(
    config_id: &str,
    value: &SessionConfigOptionValue,
    known: &[String],
    current: &str,
) -> Result<String, String> {
    if config_id != MODEL {
        return Err(format!(
            "no config option `{config_id}`: gyre offers `{MODEL}`"
        ));
    }
    let Some(value) = value.as_value_id() else {
        return Err(format!("`{MODEL}` takes a model name, not a boolean"));
    };
    let value = value.0.as_ref();
    if value == current || known.iter().any(|m| m == value) {
        Ok(value.to_string())
    } else {
        Err(format!(
            "unknown model `{value}`: choose one of {}",
            known.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        vec!["big".into(), "small".into()]
    }

    #[test]
    fn the_option_is_a_model_select_with_the_current_value() {
        let wire = serde_json::to_value(options(&known(), "small")).unwrap();
        let option = &wire[0];
        assert_eq!(option["id"], "model");
        assert_eq!(option["category"], "model");
        assert_eq!(option["type"], "select");
        assert_eq!(option["currentValue"], "small");
        let values: Vec<&str> = option["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["value"].as_str().unwrap())
            .collect();
        assert_eq!(values, ["big", "small"]);
        let unlisted = serde_json::to_value(options(&known(), "agent-own")).unwrap();
        assert_eq!(unlisted[0]["options"][0]["value"], "agent-own");
    }

    #[test]
    fn only_a_listed_model_is_chosen() {
        let value = |v: &str| SessionConfigOptionValue::value_id(v.to_string());
        assert_eq!(
            chosen(MODEL, &value("small"), &known(), "big").unwrap(),
            "small"
        );
        assert_eq!(
            chosen(MODEL, &value("mine"), &known(), "mine").unwrap(),
            "mine"
        );
        let typo = chosen(MODEL, &value("smal"), &known(), "big").unwrap_err();
        assert!(
            typo.contains("`smal`") && typo.contains("big, small"),
            "{typo}"
        );
        let other = chosen("effort", &value("small"), &known(), "big").unwrap_err();
        assert!(other.contains("`effort`"), "{other}");
        let boolean = SessionConfigOptionValue::boolean(true);
        assert!(chosen(MODEL, &boolean, &known(), "big").is_err());
    }
}
