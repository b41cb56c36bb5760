//! The models a session can switch to, and what switching changes: one
//! list and one adjustment shared by every frontend that offers a model
//! choice (the TUI's `/model`, ACP's `model` config option).
//!
//! Invariants:
//! - [`known`] starts with the provider's model, then the configured ones
//!   (`[subagents] small_model`, the dual model, the compaction model,
//!   the config's other model names, the agents' models), then the
//!   catalogue's models of the provider's vendor, only when the base URL
//!   is the vendor's own endpoint (a local server or a router has models
//!   of its own that gyre cannot list). No blank name, no duplicate.
//! - [`adjust`] sets the model with the limits and prices the config
//!   describes for it (`[models."NAME"]`), else the catalogue's; a limit
//!   neither gives stays as configured, and a price neither gives is
//!   unknown (its cost is not guessed).
//!
//! Pure: no IO, no network (the list is what gyre knows, not what the
//! server serves).

use std::collections::BTreeMap;

use gyre_core::AgentConfig;
use gyre_llm::catalog::Pricing;

use crate::provider::Wire;
use crate::{CATALOGUED_OUTPUT_CAP, Settings};

/// The models a session of `settings` can switch to, the provider's first;
/// `agent_models` are the agent catalogue's models.
pub fn known<'a>(
    settings: &'a Settings,
    agent_models: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let provider = &settings.provider;
    let mut models = vec![provider.model.clone()];
    let configured = [
        &settings.small_model,
        &settings.dual_model,
        &settings.context.compaction_model,
    ]
    .into_iter()
    .flatten()
    .chain(&settings.configured_models)
    .map(String::as_str)
    .chain(agent_models);
    let catalogued: Vec<&str> = gyre_llm::catalog::names()
        .filter(|name| provider.on_vendor_endpoint() && of_vendor(name, provider.wire))
        .collect();
    for model in configured.chain(catalogued) {
        if !model.trim().is_empty() && !models.iter().any(|m| m == model) {
            models.push(model.to_string());
        }
    }
    models
}

/// What the config says of one model (`[models."NAME"]`): each field, when
/// given, wins over the catalogue.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelOverride {
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    /// Both prices given (cache prices default to the input price).
    pub pricing: Option<Pricing>,
}

/// `config` switched to `model`, with the limits and prices the config
/// describes for it (`overrides`), else the catalogue's; a limit neither
/// knows stays as it was, a price neither knows is unknown.
pub fn adjust(overrides: &BTreeMap<String, ModelOverride>, config: &mut AgentConfig, model: &str) {
    config.model = model.to_string();
    let own = overrides.get(model).copied().unwrap_or_default();
    let info = gyre_llm::catalog::lookup(model);
    config.pricing = own.pricing.or_else(|| info.and_then(|i| i.pricing));
    if let Some(window) = own.context_window.or(info.map(|i| i.context_window)) {
        config.context.window = Some(window);
    }
    let catalogued_output =
        info.map(|i| i.max_output_tokens.min(u64::from(CATALOGUED_OUTPUT_CAP)) as u32);
    if let Some(max) = own.max_output_tokens.or(catalogued_output) {
        config.max_output_tokens = max;
    }
}

/// Whether the catalogued model `name` is of the vendor that speaks `wire`.
fn of_vendor(name: &str, wire: Wire) -> bool {
    match wire {
        Wire::Anthropic => name.starts_with("claude-"),
        Wire::Gemini => name.starts_with("gemini-"),
        Wire::OpenAiChat | Wire::OpenAiResponses => {
            name.starts_with("gpt-") || name.starts_with('o')
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;

    fn settings(provider: Provider) -> Settings {
        Settings {
            provider,
            small_model: Some("small".into()),
            dual_model: Some(String::new()),
            configured_models: vec!["configured".into(), "small".into()],
            ..Settings::default()
        }
    }

    #[test]
    fn the_provider_model_comes_first_then_configured_then_the_vendors() {
        let vendor = Provider::default();
        assert!(vendor.on_vendor_endpoint());
        let models = known(&settings(vendor.clone()), ["agent-model", "configured"]);
        assert_eq!(
            models[..4],
            [
                vendor.model.clone(),
                "small".into(),
                "configured".into(),
                "agent-model".into()
            ]
        );
        let rest = &models[4..];
        assert!(!rest.is_empty());
        assert!(rest.iter().all(|m| of_vendor(m, vendor.wire)), "{rest:?}");
        let mut unique = models.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), models.len());
    }

    #[test]
    fn another_endpoint_lists_no_catalogue() {
        let local = Provider {
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "local-model".into(),
            ..Provider::default()
        };
        let models = known(&settings(local), []);
        assert_eq!(models, ["local-model", "small", "configured"]);
    }

    #[test]
    fn adjusting_takes_the_catalogues_limits_or_drops_the_price() {
        let none = BTreeMap::new();
        let mut config = AgentConfig::new("old", "");
        let catalogued = gyre_llm::catalog::names().next().unwrap();
        adjust(&none, &mut config, catalogued);
        assert_eq!(config.model, catalogued);
        assert!(config.context.window.is_some());
        assert!(config.max_output_tokens <= CATALOGUED_OUTPUT_CAP);
        adjust(&none, &mut config, "not-in-the-catalogue");
        assert_eq!(config.model, "not-in-the-catalogue");
        assert!(config.pricing.is_none());
    }

    /// A model the config describes (`[models."m1"]`) gets its window,
    /// output limit and prices on a switch, over the catalogue's.
    #[test]
    fn adjusting_takes_what_the_config_says_of_the_model() {
        let pricing = Pricing {
            input: 0.5,
            output: 1.5,
            cache_read: 0.05,
            cache_write: 0.6,
        };
        let catalogued = gyre_llm::catalog::names().next().unwrap().to_string();
        let described = ModelOverride {
            context_window: Some(16_000),
            max_output_tokens: Some(2_048),
            pricing: Some(pricing),
        };
        let overrides: BTreeMap<String, ModelOverride> = [
            ("m1".to_string(), described),
            (catalogued.clone(), described),
        ]
        .into();
        for model in ["m1", catalogued.as_str()] {
            let mut config = AgentConfig::new("old", "");
            adjust(&overrides, &mut config, model);
            assert_eq!(config.context.window, Some(16_000), "{model}");
            assert_eq!(config.max_output_tokens, 2_048, "{model}");
            assert_eq!(config.pricing, Some(pricing), "{model}");
        }
        // Only a price: the limits stay as they were.
        let priced: BTreeMap<String, ModelOverride> = [(
            "m2".to_string(),
            ModelOverride {
                pricing: Some(pricing),
                ..ModelOverride::default()
            },
        )]
        .into();
        let mut config = AgentConfig::new("old", "");
        config.context.window = Some(8_000);
        config.max_output_tokens = 1_000;
        adjust(&priced, &mut config, "m2");
        assert_eq!(
            (
                config.context.window,
                config.max_output_tokens,
                config.pricing
            ),
            (Some(8_000), 1_000, Some(pricing))
        );
    }
}
