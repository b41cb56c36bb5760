//! `/model`: showing, completing and switching the model of the next
//! prompts, and what the switch would cost.
//!
//! Invariants:
//! - Any name is accepted (a local server's models are not in the
//!   catalogue), but one the backend does not know (neither the catalogue
//!   of the provider nor the configuration) is a warning naming the risk,
//!   so a typo is seen before the next prompt fails.
//! - Prices are said only when known (the catalogue's for the name);
//!   otherwise the notice says they are unknown, as `/cost` does.

use gyre_llm::catalog::Pricing;

use super::{App, Backend};
use crate::input::complete::{Completion, CompletionKind};
use crate::input::editor::Editor;
use crate::transcript::NoticeKind;
use crate::view::{CompletionItem, CompletionPopup};

/// The command whose argument completes from the models.
const COMMAND: &str = "/model";

/// `$3 in · $15 out per million tokens`.
pub(super) fn prices(pricing: &Pricing) -> String {
    format!(
        "${} in · ${} out per million tokens",
        trim_price(pricing.input),
        trim_price(pricing.output)
    )
}

/// `3`, `0.25`, `1.75`: no trailing zeros.
fn trim_price(price: f64) -> String {
    let text = format!("{price:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `/cost`'s last line: the session's cost and whose prices it counts.
/// With no prices for `model`, the cost is only that of models with known
/// prices (a subagent's), and the line says so instead of passing it off
/// as the session's.
pub(super) fn cost_line(cost_usd: f64, model: &str, pricing: Option<&Pricing>) -> String {
    match pricing {
        Some(pricing) => format!("${cost_usd:.4} (at {model}'s prices: {})", prices(pricing)),
        None if cost_usd > 0.0 => format!(
            "${cost_usd:.4} for the models with known prices (subagents'); \
             {model}'s own tokens are not counted: its prices are unknown"
        ),
        None => format!("unknown (no prices for {model})"),
    }
}

/// The catalogue's prices of `model`, if it has them.
fn catalogued_prices(model: &str) -> Option<Pricing> {
    gyre_llm::catalog::lookup(model).and_then(|info| info.pricing)
}

/// Whether the editor holds `/model ` (then only models complete).
pub(super) fn wants_completion(editor: &Editor) -> bool {
    editor
        .text()
        .strip_prefix(COMMAND)
        .is_some_and(|rest| rest.starts_with(' '))
}

/// Completion of `/model NAME`'s name from `models`, when the cursor is
/// in the command's first argument.
pub(super) fn complete(editor: &Editor, models: &[String], current: &str) -> Option<Completion> {
    let token = editor.token()?;
    let text = editor.text();
    let first_line = text.lines().next()?;
    let after = first_line.strip_prefix(COMMAND)?;
    // Only the first word after `/model ` completes.
    let argument_start = COMMAND.len() + (after.len() - after.trim_start().len());
    if token.row != 0 || !after.starts_with(' ') || token.start != argument_start {
        return None;
    }
    let items: Vec<CompletionItem> = models
        .iter()
        .filter(|m| m.starts_with(&token.text))
        .map(|m| CompletionItem {
            label: m.clone(),
            detail: match (m == current, catalogued_prices(m)) {
                (true, _) => "current".to_string(),
                (false, Some(pricing)) => prices(&pricing),
                (false, None) => String::new(),
            },
        })
        .collect();
    if items.is_empty() {
        return None;
    }
    Some(Completion {
        kind: CompletionKind::Command,
        token,
        popup: CompletionPopup { items, selected: 0 },
    })
}

impl<B: Backend> App<B> {
    pub(super) fn switch_model(&mut self, name: Option<&str>) {
        let known = self.backend.models();
        let Some(name) = name else {
            let current = self.transcript.status().model.clone();
            let mut text = format!("Model: {current}");
            if let Some(pricing) = self.current_pricing() {
                text.push_str(&format!(" ({})", prices(&pricing)));
            }
            if !known.is_empty() {
                text.push_str(&format!("\nKnown models: {}", known.join(", ")));
            }
            text.push_str("\n/model NAME switches the next prompts to NAME (Tab completes).");
            self.notice(NoticeKind::Command, text);
            return;
        };
        let mut choice = self.choice.clone();
        choice.model = Some(name.to_string());
        if !self.apply_choice(choice) {
            return;
        }
        let cost = match self.current_pricing() {
            Some(pricing) => prices(&pricing),
            None => "prices unknown, so /cost cannot price its tokens".to_string(),
        };
        if known.iter().any(|m| m == name) {
            self.notice(
                NoticeKind::Info,
                format!("Model {name} for the next prompts ({cost})."),
            );
        } else {
            self.notice(
                NoticeKind::Warning,
                format!(
                    "Model {name} for the next prompts, but it is neither in the catalogue of the provider nor configured: \
                     check that the server has it ({cost}). /model lists the known ones."
                ),
            );
        }
    }

    /// The prices of the model the next prompt runs, if known.
    pub(super) fn current_pricing(&self) -> Option<Pricing> {
        self.current_agent()
            .and_then(|agent| agent.config().pricing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn editor(text: &str) -> Editor {
        let mut editor = Editor::new();
        editor.set_text(text);
        editor
    }

    fn labels(completion: Option<Completion>) -> Vec<String> {
        completion
            .map(|c| c.popup.items.into_iter().map(|i| i.label).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_cost_line_says_whose_prices_it_counts() {
        let pricing = catalogued_prices("claude-sonnet-4-5").unwrap();
        assert_eq!(
            cost_line(0.5, "claude-sonnet-4-5", Some(&pricing)),
            "$0.5000 (at claude-sonnet-4-5's prices: $3 in · $15 out per million tokens)"
        );
        let partial = cost_line(0.0056, "my-local", None);
        assert!(
            partial.starts_with("$0.0056 for the models with known prices"),
            "{partial}"
        );
        assert!(
            partial.contains("my-local's own tokens are not counted"),
            "{partial}"
        );
        assert_eq!(
            cost_line(0.0, "my-local", None),
            "unknown (no prices for my-local)"
        );
    }

    #[test]
    fn the_argument_of_model_completes_from_the_models() {
        let models = vec![
            "claude-sonnet-4-5".to_string(),
            "claude-haiku-4-5".to_string(),
            "my-local".to_string(),
        ];
        let current = "claude-sonnet-4-5";
        assert_eq!(
            labels(complete(&editor("/model claude-h"), &models, current)),
            ["claude-haiku-4-5"]
        );
        assert_eq!(
            labels(complete(&editor("/model "), &models, current)).len(),
            3
        );
        assert!(complete(&editor("/models x"), &models, current).is_none());
        assert!(complete(&editor("/model my-local x"), &models, current).is_none());
        assert!(complete(&editor("tell me about /model c"), &models, current).is_none());
        let popup = complete(&editor("/model "), &models, current)
            .unwrap()
            .popup;
        assert_eq!(popup.items[0].detail, "current");
        assert_eq!(popup.items[1].detail, "$1 in · $5 out per million tokens");
        assert_eq!(popup.items[2].detail, "");
    }
}
