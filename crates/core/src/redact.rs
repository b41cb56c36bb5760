//! Secrets kept out of what is stored: tool outputs, and exports.
//!
//! A [`Redactor`] replaces every match of one compiled regular expression
//! with [`REDACTED`]. The expression is an alternation of:
//! - the values of the provider key variables set in the process
//!   environment ([`KEY_VARIABLES`]), taken literally;
//! - patterns the user configured (`[redact] patterns` in the config);
//! - built-in patterns for well-known key shapes ([`BUILT_IN_PATTERNS`]).
//!
//! Invariants:
//! - It is compiled once, when the redactor is built; redacting never
//!   compiles anything, and text without a match is not copied.
//! - An invalid configured pattern is an error when the redactor is built,
//!   never a silent gap at redaction time.
//! - Redacting twice changes nothing more: the marker matches no built-in
//!   pattern (a configured pattern that matches it is the user's choice).
//! - The redactor's `Debug` form shows no secret, only how many sources it
//!   has.
//!
//! Trade-offs: the built-in shapes need a word boundary before the prefix
//! (`sk-` inside `task-runner-…` is not a key), and short values (under
//! [`MIN_SECRET_LEN`] characters) are not taken from the environment, since
//! they would redact ordinary words. A secret split across two progress
//! chunks of a running tool is not redacted in those display-only chunks;
//! the stored result is redacted whole.

use std::borrow::Cow;

use gyre_protocol::{Message, Part, ToolResult, ToolResultContent};
use std::sync::{Arc, OnceLock};

use regex::{NoExpand, Regex, RegexBuilder};

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// The environment variables whose values are secrets.
pub const KEY_VARIABLES: [&str; 5] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
];

/// Shorter environment values are not treated as secrets.
pub const MIN_SECRET_LEN: usize = 8;

/// Longer environment values are not keys (and would bloat the expression).
const MAX_SECRET_LEN: usize = 4_096;

/// Well-known key shapes.
pub const BUILT_IN_PATTERNS: [&str; 8] = [
    // Anthropic (`sk-ant-…`), OpenAI (`sk-…`, `sk-proj-…`), OpenRouter (`sk-or-…`).
    r"\bsk-[A-Za-z0-9_\-]{20,}",
    // AWS access key ids.
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    // GitHub tokens, classic and fine-grained.
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    // Slack tokens.
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
    // Google API keys.
    r"\bAIza[0-9A-Za-z_\-]{35}",
    // Bearer tokens in headers that a command printed.
    r"(?i)\bauthorization:\s*bearer\s+[A-Za-z0-9._~+/=\-]{16,}",
    // Private keys, whole (or to the end, when the end was cut off).
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?-----END [A-Z ]*PRIVATE KEY-----|.*)",
];

/// The compiled expression's size limit: generous for a few dozen patterns
/// and keys, small enough that a pathological pattern fails at start-up.
const SIZE_LIMIT: usize = 32 * 1024 * 1024;

/// Why a redactor could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    #[error("the redact pattern `{pattern}` is not a valid regular expression: {source}")]
    InvalidPattern {
        pattern: String,
        #[source]
        source: Box<regex::Error>,
    },
    #[error("the redact patterns and keys together are too large to compile: {0}")]
    TooLarge(Box<regex::Error>),
}

/// Text one of the built-in shapes starts with (ASCII): a text holding
/// none of them, and none of the literal secrets, cannot match them, so the
/// expression is neither compiled nor run for it (most tool outputs).
const SHAPE_MARKERS: [&str; 12] = [
    "sk-",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "AIza",
    "-----BEGIN",
];
/// The bearer-token shape's marker, matched in any case.
const BEARER_MARKER: &[u8] = b"authorization";

/// Replaces secrets with [`REDACTED`].
#[derive(Clone)]
pub struct Redactor {
    /// `None`: nothing to redact.
    matcher: Option<Arc<Matcher>>,
    sources: usize,
}

/// The expression and what decides whether it must run.
struct Matcher {
    /// The literal secrets (the expression holds them escaped).
    literals: Vec<String>,
    /// Configured patterns can match anything: the expression always runs.
    configured: bool,
    /// All alternatives, compiled on first need (compiling touches a lot of
    /// code and memory a run without secrets never needs).
    source: String,
    compiled: OnceLock<Option<Regex>>,
}

impl Matcher {
    fn may_match(&self, text: &str) -> bool {
        self.configured
            || SHAPE_MARKERS.iter().any(|m| text.contains(m))
            || text
                .as_bytes()
                .windows(BEARER_MARKER.len())
                .any(|w| w.eq_ignore_ascii_case(BEARER_MARKER))
            || self.literals.iter().any(|l| text.contains(l.as_str()))
    }

    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| {
                RegexBuilder::new(&self.source)
                    .size_limit(SIZE_LIMIT)
                    .build()
                    .map_err(|e| tracing::warn!("the redaction expression does not compile: {e}"))
                    .ok()
            })
            .as_ref()
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("sources", &self.sources)
            .finish_non_exhaustive()
    }
}

impl Default for Redactor {
    /// The provider keys in the environment and the built-in shapes. Both
    /// are literal or fixed, so this cannot fail but by the size limit (an
    /// absurd environment); then only the built-in shapes are used.
    fn default() -> Self {
        Self::from_env(&[]).unwrap_or_else(|error| {
            tracing::warn!("redacting built-in key shapes only: {error}");
            Self::new(Vec::<String>::new(), &[]).unwrap_or_else(|_| Self::disabled())
        })
    }
}

impl Redactor {
    /// Redacts the provider keys set in this process's environment,
    /// `patterns` (the user's configuration) and the built-in shapes.
    pub fn from_env(patterns: &[String]) -> Result<Self, RedactError> {
        Self::from_vars(
            std::env::vars_os().filter_map(|(name, value)| {
                Some((name.into_string().ok()?, value.into_string().ok()?))
            }),
            patterns,
        )
    }

    /// As [`Redactor::from_env`], with the environment given: the values of
    /// the variables named in [`KEY_VARIABLES`] are secrets.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
        patterns: &[String],
    ) -> Result<Self, RedactError> {
        let secrets = vars
            .into_iter()
            .filter(|(name, _)| KEY_VARIABLES.contains(&name.as_str()))
            .map(|(_, value)| value);
        Self::new(secrets, patterns)
    }

    /// Redacts the literal `secrets` (those of at least [`MIN_SECRET_LEN`]
    /// characters after trimming), `patterns` and the built-in shapes.
    pub fn new(
        secrets: impl IntoIterator<Item = String>,
        patterns: &[String],
    ) -> Result<Self, RedactError> {
        let mut alternatives: Vec<String> = Vec::new();
        let mut literals: Vec<String> = secrets
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| (MIN_SECRET_LEN..=MAX_SECRET_LEN).contains(&s.chars().count()))
            .collect();
        // Longest first: a key that contains another is replaced whole.
        literals.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        literals.dedup();
        alternatives.extend(literals.iter().map(|s| regex::escape(s)));
        for pattern in patterns {
            // Each configured pattern alone first, so that the error names it.
            Regex::new(pattern).map_err(|source| RedactError::InvalidPattern {
                pattern: pattern.clone(),
                source: Box::new(source),
            })?;
            alternatives.push(pattern.clone());
        }
        alternatives.extend(BUILT_IN_PATTERNS.iter().map(|p| (*p).to_string()));
        let sources = alternatives.len();
        let joined = alternatives
            .iter()
            .map(|a| format!("(?:{a})"))
            .collect::<Vec<_>>()
            .join("|");
        let configured = !patterns.is_empty();
        let matcher = Matcher {
            literals,
            configured,
            source: joined,
            compiled: OnceLock::new(),
        };
        // With the user's patterns, a size problem shows at start-up.
        if configured {
            let regex = RegexBuilder::new(&matcher.source)
                .size_limit(SIZE_LIMIT)
                .build()
                .map_err(|e| RedactError::TooLarge(Box::new(e)))?;
            let _ = matcher.compiled.set(Some(regex));
        }
        Ok(Self {
            matcher: Some(Arc::new(matcher)),
            sources,
        })
    }

    /// A redactor that redacts nothing.
    pub fn disabled() -> Self {
        Self {
            matcher: None,
            sources: 0,
        }
    }

    /// `text` with every secret replaced; borrowed when there was none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(matcher) = self.matcher.as_deref().filter(|m| m.may_match(text)) else {
            return Cow::Borrowed(text);
        };
        match matcher.regex() {
            Some(regex) => regex.replace_all(text, NoExpand(REDACTED)),
            None => Cow::Borrowed(text),
        }
    }

    /// Redacts every string of a JSON value in place (a session's state in
    /// an export holds text too); whether anything was replaced.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> bool {
        match value {
            serde_json::Value::String(text) => self.redact_string(text),
            serde_json::Value::Array(items) => items
                .iter_mut()
                .fold(false, |any, v| self.redact_json(v) | any),
            serde_json::Value::Object(map) => map
                .values_mut()
                .fold(false, |any, v| self.redact_json(v) | any),
            _ => false,
        }
    }

    /// Redacts `text` in place; whether anything was replaced.
    pub fn redact_string(&self, text: &mut String) -> bool {
        match self.redact(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(redacted) => {
                *text = redacted;
                true
            }
        }
    }

    /// Redacts a tool result's text content (images are left alone).
    pub fn redact_result(&self, result: &mut ToolResult) -> bool {
        let title = self.redact_string(&mut result.title);
        self.redact_content(&mut result.content) | title
    }

    /// Redacts the text of tool output content (images are left alone).
    pub fn redact_content(&self, content: &mut [ToolResultContent]) -> bool {
        let mut changed = false;
        for item in content {
            if let ToolResultContent::Text { text } = item {
                changed |= self.redact_string(text);
            }
        }
        changed
    }

    /// Redacts a whole message, for exports: text, reasoning, tool call
    /// arguments and tool results. A redacted reasoning part keeps its
    /// signature, which no longer verifies: an export is for reading, not
    /// for sending back to the provider.
    pub fn redact_message(&self, message: &mut Message) -> bool {
        let mut changed = false;
        for part in &mut message.parts {
            changed |= match part {
                Part::Text { text } | Part::Reasoning { text, .. } => self.redact_string(text),
                Part::ToolCall(call) => self.redact_string(&mut call.arguments),
                Part::ToolResult(result) => self.redact_result(result),
                Part::Image { .. } => false,
            };
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gyre_protocol::{Outcome, Role, ToolCall};

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn environment_keys_are_redacted_other_variables_are_not() {
        let redactor = Redactor::from_vars(
            vars(&[
                ("OPENAI_API_KEY", "plain-secret-value-1"),
                ("OPENROUTER_API_KEY", "router.secret/2"),
                ("GEMINI_API_KEY", "short"),
                ("HOME", "/home/someone-long"),
            ]),
            &[],
        )
        .unwrap();
        assert_eq!(
            redactor.redact("a plain-secret-value-1 b router.secret/2 c"),
            "a [REDACTED] b [REDACTED] c"
        );
        // Under 8 characters: an ordinary word, left alone.
        assert_eq!(redactor.redact("short"), "short");
        assert_eq!(redactor.redact("/home/someone-long"), "/home/someone-long");
        // Regex syntax in a value is taken literally.
        let dots = Redactor::from_vars(vars(&[("GOOGLE_API_KEY", "a.b.c.d.e")]), &[]).unwrap();
        assert_eq!(dots.redact("a.b.c.d.e axbxcxdxe"), "[REDACTED] axbxcxdxe");
    }

    #[test]
    fn built_in_shapes_are_redacted() {
        let redactor = Redactor::new(Vec::new(), &[]).unwrap();
        let cases = [
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX_yz-0123",
            "sk-or-v1-0123456789abcdef0123456789abcdef",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "xoxb-123456789012-abcdefABCDEF",
            "AIzaSyA-0123456789abcdefghijklmnopqrstu",
        ];
        for key in cases {
            let text = format!("key={key}\n");
            assert_eq!(redactor.redact(&text), "key=[REDACTED]\n", "{key}");
        }
        let pem = "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----\ny";
        assert_eq!(redactor.redact(pem), "x\n[REDACTED]\ny");
        let header = "Authorization: Bearer abcdefghijklmnop.qrstuv";
        assert_eq!(redactor.redact(header), "[REDACTED]");
    }

    #[test]
    fn ordinary_text_is_left_alone_and_borrowed() {
        let redactor = Redactor::new(vec!["sekrit-value".into()], &[]).unwrap();
        for text in [
            "task-runner-configuration-module",
            "sk-short",
            "fn mask_generation_utilities() {}",
            "AKIA-not-a-key",
            "[REDACTED]",
        ] {
            assert!(matches!(redactor.redact(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn the_expression_is_compiled_only_for_text_that_may_hold_a_secret() {
        let redactor = Redactor::new(vec!["sekrit-value".into()], &[]).unwrap();
        let compiled = |r: &Redactor| {
            r.matcher
                .as_ref()
                .is_some_and(|m| m.compiled.get().is_some())
        };
        assert!(matches!(
            redactor.redact("cargo test: 12 passed"),
            Cow::Borrowed(_)
        ));
        assert!(
            !compiled(&redactor),
            "clean text never compiles the expression"
        );
        // Any case of the bearer header is noticed.
        let text = "AuThOrIzAtIoN: Bearer abcdefghijklmnopqrstuvwx";
        assert_eq!(redactor.redact(text), "[REDACTED]");
        assert!(compiled(&redactor));
    }

    #[test]
    fn configured_patterns_apply_and_invalid_ones_are_errors() {
        let patterns = vec![r"corp-[0-9]{6}".to_string()];
        let redactor = Redactor::new(Vec::new(), &patterns).unwrap();
        assert_eq!(redactor.redact("id corp-123456!"), "id [REDACTED]!");
        let error = Redactor::new(Vec::new(), &["(unclosed".to_string()]).unwrap_err();
        assert!(
            matches!(&error, RedactError::InvalidPattern { pattern, .. } if pattern == "(unclosed"),
            "{error}"
        );
        assert!(error.to_string().contains("(unclosed"));
    }

    #[test]
    fn the_longest_secret_wins_and_redacting_twice_changes_nothing() {
        let secrets = ["secret-1234", "secret-1234-extra", "secret-1234"];
        let redactor = Redactor::new(secrets.map(String::from), &[]).unwrap();
        let once = redactor.redact("x secret-1234-extra y").into_owned();
        assert_eq!(once, "x [REDACTED] y");
        assert_eq!(redactor.redact(&once), once);
    }

    #[test]
    fn messages_are_redacted_everywhere_but_images() {
        let redactor = Redactor::new(vec!["hunter2-hunter2".into()], &[]).unwrap();
        let mut message = Message::new(
            "m",
            Role::Assistant,
            vec![
                Part::text("say hunter2-hunter2"),
                Part::Reasoning {
                    text: "hunter2-hunter2".into(),
                    signature: None,
                    redacted: false,
                },
                Part::ToolCall(ToolCall::new(
                    "c",
                    "bash",
                    r#"{"command":"echo hunter2-hunter2"}"#,
                )),
                Part::ToolResult(ToolResult::text(
                    "c",
                    "bash",
                    "hunter2-hunter2\n",
                    Outcome::Success,
                )),
                Part::Image {
                    media_type: "image/png".into(),
                    data: "aHVudGVyMg==".into(),
                },
            ],
        );
        assert!(redactor.redact_message(&mut message));
        let json = serde_json::to_string(&message).unwrap();
        assert!(!json.contains("hunter2-hunter2"), "{json}");
        assert_eq!(json.matches(REDACTED).count(), 4);
        let call = message.tool_calls().next().unwrap();
        assert!(call.arguments_json().is_some(), "the arguments stay JSON");
        assert!(!redactor.redact_message(&mut message), "nothing left");
    }

    #[test]
    fn debug_shows_no_secret() {
        let redactor = Redactor::new(vec!["do-not-print-me".into()], &[]).unwrap();
        let debug = format!("{redactor:?}");
        assert!(!debug.contains("do-not-print-me"), "{debug}");
        assert_eq!(
            Redactor::disabled().redact("sk-ant-aaaaaaaaaaaaaaaaaaaaaaaaa"),
            "sk-ant-aaaaaaaaaaaaaaaaaaaaaaaaa"
        );
    }
}
