//! Choosing the provider: its wire API, base URL, key and default model.
//!
//! Base URLs follow each SDK's convention (CONTRACT.md): `ANTHROPIC_BASE_URL`
//! without `/v1`, `OPENAI_BASE_URL` with it. `--base-url` overrides the chosen
//! provider's variable, with the same convention. Presets for OpenAI-compatible
//! servers people run themselves need no key.

use std::sync::Arc;

use gyre_llm::{
    AnthropicClient, ClientConfig, GeminiClient, ModelClient, OpenAiChatClient,
    OpenAiResponsesClient,
};

use crate::config::TimeoutsConfig;

use crate::exit::Exit;

/// The wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Gemini,
}

/// Whether a provider needs a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyRule {
    Required(&'static str),
    /// The first of these variables that is set.
    RequiredAnyOf(&'static [&'static str]),
    /// Sent when the variable is set (local servers mostly ignore it).
    Optional(&'static str),
}

#[derive(Debug)]
struct Preset {
    name: &'static str,
    wire: Wire,
    base_url: &'static str,
    base_url_var: Option<&'static str>,
    key: KeyRule,
    default_model: Option<&'static str>,
    /// A cheaper model of the provider, for the `explore` agent.
    small_model: Option<&'static str>,
}

/// The provider when none is named: the first of [`PRESETS`].
const DEFAULT_PRESET: &Preset = &PRESETS[0];

const PRESETS: &[Preset] = &[
    Preset {
        name: "anthropic",
        wire: Wire::Anthropic,
        base_url: "https://api.anthropic.com",
        base_url_var: Some("ANTHROPIC_BASE_URL"),
        key: KeyRule::Required("ANTHROPIC_API_KEY"),
        default_model: Some("claude-sonnet-4-5"),
        small_model: Some("claude-haiku-4-5"),
    },
    Preset {
        name: "openai",
        wire: Wire::OpenAiChat,
        base_url: "https://api.openai.com/v1",
        base_url_var: Some("OPENAI_BASE_URL"),
        key: KeyRule::Required("OPENAI_API_KEY"),
        default_model: Some("gpt-5"),
        small_model: Some("gpt-5-mini"),
    },
    Preset {
        name: "openai-responses",
        wire: Wire::OpenAiResponses,
        base_url: "https://api.openai.com/v1",
        base_url_var: Some("OPENAI_BASE_URL"),
        key: KeyRule::Required("OPENAI_API_KEY"),
        default_model: Some("gpt-5"),
        small_model: Some("gpt-5-mini"),
    },
    Preset {
        name: "gemini",
        wire: Wire::Gemini,
        base_url: "https://generativelanguage.googleapis.com",
        base_url_var: Some("GOOGLE_GEMINI_BASE_URL"),
        key: KeyRule::RequiredAnyOf(&["GEMINI_API_KEY", "GOOGLE_API_KEY"]),
        default_model: Some("gemini-2.5-pro"),
        small_model: Some("gemini-2.5-flash"),
    },
    Preset {
        name: "openrouter",
        wire: Wire::OpenAiChat,
        base_url: "https://openrouter.ai/api/v1",
        base_url_var: None,
        key: KeyRule::Required("OPENROUTER_API_KEY"),
        default_model: None,
        small_model: None,
    },
    Preset {
        name: "ollama",
        wire: Wire::OpenAiChat,
        base_url: "http://127.0.0.1:11434/v1",
        base_url_var: None,
        key: KeyRule::Optional("OPENAI_API_KEY"),
        default_model: None,
        small_model: None,
    },
    Preset {
        name: "vllm",
        wire: Wire::OpenAiChat,
        base_url: "http://127.0.0.1:8000/v1",
        base_url_var: None,
        key: KeyRule::Optional("OPENAI_API_KEY"),
        default_model: None,
        small_model: None,
    },
    Preset {
        name: "llamacpp",
        wire: Wire::OpenAiChat,
        base_url: "http://127.0.0.1:8080/v1",
        base_url_var: None,
        key: KeyRule::Optional("OPENAI_API_KEY"),
        default_model: None,
        small_model: None,
    },
    Preset {
        name: "lmstudio",
        wire: Wire::OpenAiChat,
        base_url: "http://127.0.0.1:1234/v1",
        base_url_var: None,
        key: KeyRule::Optional("OPENAI_API_KEY"),
        default_model: None,
        small_model: None,
    },
];

/// A provider chosen and ready to build a client.
#[derive(Debug, Clone)]
pub struct Provider {
    pub name: String,
    pub wire: Wire,
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// The provider's cheaper model (for the `explore` agent), if it has
    /// one and the base URL is the vendor's own endpoint.
    pub small_model: Option<String>,
}

impl Default for Provider {
    /// The default provider's preset, without a key (`resolve` would
    /// refuse it; a test or the demo sets what it needs).
    fn default() -> Self {
        let preset = DEFAULT_PRESET;
        Provider {
            name: preset.name.to_string(),
            wire: preset.wire,
            base_url: preset.base_url.to_string(),
            api_key: None,
            model: preset.default_model.unwrap_or_default().to_string(),
            small_model: preset.small_model.map(str::to_string),
        }
    }
}

/// Where the settings come from, most important first.
#[derive(Debug, Default)]
pub struct ProviderChoice<'a> {
    pub provider: Option<&'a str>,
    pub model: Option<&'a str>,
    pub base_url: Option<&'a str>,
}

impl Provider {
    /// Resolves flags/config (already merged in `choice`) and the environment.
    pub fn resolve(
        choice: ProviderChoice<'_>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Provider, Exit> {
        let name = choice.provider.unwrap_or(DEFAULT_PRESET.name);
        let Some(preset) = PRESETS.iter().find(|p| p.name == name) else {
            return Err(Exit::usage(format!(
                "unknown provider `{name}`; use one of {}",
                preset_names()
            )));
        };
        let api_key = match preset.key {
            KeyRule::Required(var) => match env(var).filter(|k| !k.trim().is_empty()) {
                Some(key) => Some(key),
                None => {
                    return Err(Exit::usage(format!(
                        "{var} is not set: export {var}=… with your {name} API key, or choose another provider with --provider"
                    )));
                }
            },
            KeyRule::RequiredAnyOf(vars) => {
                match vars
                    .iter()
                    .find_map(|var| env(var).filter(|k| !k.trim().is_empty()))
                {
                    Some(key) => Some(key),
                    None => {
                        let first = vars.first().copied().unwrap_or_default();
                        return Err(Exit::usage(format!(
                            "{} is not set: export {first}=… with your {name} API key, or choose another provider with --provider",
                            vars.join(" or ")
                        )));
                    }
                }
            }
            KeyRule::Optional(var) => env(var).filter(|k| !k.trim().is_empty()),
        };
        let base_url = choice
            .base_url
            .map(str::to_string)
            .or_else(|| preset.base_url_var.and_then(&env))
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| preset.base_url.to_string());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(Exit::usage(format!(
                "the base URL `{base_url}` must start with http:// or https://"
            )));
        }
        let model = match choice.model.or(preset.default_model) {
            Some(model) => model.to_string(),
            None => {
                return Err(Exit::usage(format!(
                    "the provider `{name}` has no default model: pass --model NAME"
                )));
            }
        };
        let base_url = base_url.trim_end_matches('/').to_string();
        // A server at another address (a local server, vLLM, LiteLLM, a
        // company proxy) rarely has the vendor's cheaper model: gyre then
        // picks nothing on its own and every agent asks for the session's.
        let mut provider = Provider {
            name: name.to_string(),
            wire: preset.wire,
            base_url,
            api_key,
            model,
            small_model: None,
        };
        // A server at another address (a local server, vLLM, LiteLLM, a
        // company proxy) rarely has the vendor's cheaper model: gyre then
        // picks nothing on its own and every agent asks for the session's.
        if provider.on_vendor_endpoint() {
            provider.small_model = preset.small_model.map(str::to_string);
        }
        Ok(provider)
    }

    /// Whether the base URL is the vendor's own endpoint (where the
    /// vendor's models, such as its small one, exist).
    pub fn on_vendor_endpoint(&self) -> bool {
        PRESETS
            .iter()
            .find(|p| p.name == self.name)
            .is_some_and(|p| self.base_url == p.base_url.trim_end_matches('/'))
    }

    pub fn client(&self, timeouts: &TimeoutsConfig) -> Arc<dyn ModelClient> {
        let mut config = ClientConfig::new(self.base_url.clone(), self.api_key.clone());
        let ms = std::time::Duration::from_millis;
        if let Some(connect) = timeouts.connect_ms {
            config = config.with_connect_timeout(ms(connect));
        }
        if let Some(first_byte) = timeouts.first_byte_ms {
            config.first_byte_timeout = ms(first_byte);
        }
        if let Some(idle) = timeouts.idle_ms {
            config.idle_timeout = ms(idle);
        }
        match self.wire {
            Wire::Anthropic => Arc::new(AnthropicClient::new(config)),
            Wire::OpenAiChat => Arc::new(OpenAiChatClient::new(config)),
            Wire::OpenAiResponses => Arc::new(OpenAiResponsesClient::new(config)),
            Wire::Gemini => Arc::new(GeminiClient::new(config)),
        }
    }
}

fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn missing_key_names_the_variable() {
        let err = Provider::resolve(ProviderChoice::default(), env_with(&[])).unwrap_err();
        assert_eq!(err.code, 2);
        assert!(
            err.message.starts_with("ANTHROPIC_API_KEY is not set"),
            "{}",
            err.message
        );
    }

    #[test]
    fn flag_beats_variable_beats_default_base_url() {
        let env = env_with(&[
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://env/v1/"),
        ]);
        let choice = ProviderChoice {
            provider: Some("openai"),
            ..Default::default()
        };
        assert_eq!(
            Provider::resolve(choice, &env).unwrap().base_url,
            "http://env/v1"
        );
        let choice = ProviderChoice {
            provider: Some("openai"),
            base_url: Some("http://flag/v1"),
            ..Default::default()
        };
        assert_eq!(
            Provider::resolve(choice, &env).unwrap().base_url,
            "http://flag/v1"
        );
    }

    #[test]
    fn local_presets_need_a_model_but_no_key() {
        let choice = ProviderChoice {
            provider: Some("ollama"),
            ..Default::default()
        };
        assert!(
            Provider::resolve(choice, env_with(&[]))
                .unwrap_err()
                .message
                .contains("--model")
        );
        let choice = ProviderChoice {
            provider: Some("ollama"),
            model: Some("qwen3"),
            ..Default::default()
        };
        let p = Provider::resolve(choice, env_with(&[])).unwrap();
        assert_eq!((p.wire, p.api_key), (Wire::OpenAiChat, None));
    }

    #[test]
    fn the_small_model_only_on_the_vendors_own_endpoint() {
        let env = env_with(&[("OPENAI_API_KEY", "k")]);
        let vendor = ProviderChoice {
            provider: Some("openai"),
            base_url: Some("https://api.openai.com/v1/"),
            ..Default::default()
        };
        let p = Provider::resolve(vendor, &env).unwrap();
        assert_eq!(p.small_model.as_deref(), Some("gpt-5-mini"));
        let custom = ProviderChoice {
            provider: Some("openai"),
            model: Some("my-local-model"),
            base_url: Some("http://127.0.0.1:8000/v1"),
        };
        let p = Provider::resolve(custom, &env).unwrap();
        assert_eq!(p.small_model, None);
        let env = env_with(&[
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_BASE_URL", "https://proxy.example.com"),
        ]);
        let p = Provider::resolve(ProviderChoice::default(), &env).unwrap();
        assert_eq!(p.small_model, None);
    }
}
