//! Reasoning effort (`--effort`, config `effort`): one setting mapped onto
//! each wire API's own knob.
//!
//! | effort | Anthropic `thinking.budget_tokens` | OpenAI `reasoning.effort` / `reasoning_effort` | Gemini 2.5 `thinkingBudget` | Gemini 3 `thinkingLevel` |
//! |---|---|---|---|---|
//! | low | 4 000 | `low` | 1 024 | `low` |
//! | medium | 10 000 | `medium` | 8 192 | `high` |
//! | high | 20 000 | `high` | 16 384 | `high` |
//! | max | 31 999 | `high` | 24 576 | `high` |
//!
//! Trade-offs: the Anthropic budgets are Claude Code's think / megathink /
//! ultrathink steps; a budget must stay below the request's `max_tokens`
//! ([`Effort::anthropic_budget`] keeps 4 096 tokens for the answer, and
//! below a budget of 1 024 there is no room to think, so none is asked). OpenAI's `max` is `high`: `xhigh` is known
//! only to a few models and refused by the rest.

use std::fmt;
use std::str::FromStr;

/// How hard the model thinks before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    /// `xhigh` is read as this (Claude Code's and Codex's spelling).
    #[serde(alias = "xhigh")]
    Max,
}

/// Output tokens kept for the answer after Anthropic's thinking.
const ANSWER_ROOM: u32 = 4096;

/// Anthropic's least thinking budget.
const ANTHROPIC_MIN_BUDGET: u32 = 1024;

impl Effort {
    pub const ALL: [Effort; 4] = [Effort::Low, Effort::Medium, Effort::High, Effort::Max];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }

    /// Anthropic's thinking budget under an output limit of `max_tokens`
    /// (`None`: the limit leaves no room to think).
    pub fn anthropic_budget(self, max_tokens: u32) -> Option<u32> {
        let wanted = match self {
            Effort::Low => 4_000,
            Effort::Medium => 10_000,
            Effort::High => 20_000,
            Effort::Max => 31_999,
        };
        // Room for the answer after the thinking.
        let budget = wanted.min(max_tokens.saturating_sub(ANSWER_ROOM));
        (budget >= ANTHROPIC_MIN_BUDGET).then_some(budget)
    }

    /// OpenAI's `reasoning.effort` (Responses) and `reasoning_effort` (Chat).
    pub fn openai(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High | Effort::Max => "high",
        }
    }

    /// Gemini 2.5's `thinkingBudget`.
    pub fn gemini_budget(self) -> u32 {
        match self {
            Effort::Low => 1_024,
            Effort::Medium => 8_192,
            Effort::High => 16_384,
            Effort::Max => 24_576,
        }
    }

    /// Gemini 3's `thinkingLevel` (`low` or `high`).
    pub fn gemini_level(self) -> &'static str {
        match self {
            Effort::Low => "low",
            _ => "high",
        }
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Effort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            "max" | "xhigh" => Ok(Effort::Max),
            other => Err(format!(
                "unknown effort `{other}`: low, medium, high or max"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_stay_under_the_output_limit() {
        assert_eq!(Effort::High.anthropic_budget(64_000), Some(20_000));
        assert_eq!(Effort::Max.anthropic_budget(8_192), Some(4_096));
        assert_eq!(Effort::Low.anthropic_budget(1_500), None);
    }

    #[test]
    fn names_parse_both_ways() {
        for effort in Effort::ALL {
            assert_eq!(effort.as_str().parse::<Effort>(), Ok(effort));
        }
        assert_eq!("xhigh".parse::<Effort>(), Ok(Effort::Max));
        assert!("extreme".parse::<Effort>().is_err());
    }
}
