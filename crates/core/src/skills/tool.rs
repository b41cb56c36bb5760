//! `skill`: loads one skill's instructions. Its description lists the
//! skills the agent sees (name and description only, bounded, in name
//! order), as Claude Code's Skill tool does; the result is the body of the
//! skill's `SKILL.md` and the folder its other files are in.

use futures::future::BoxFuture;
use gyre_protocol::ToolSpec;
use gyre_tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput, input_schema, parse_args};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{MAX_DESCRIPTION_CHARS, MAX_LISTING_BYTES, SKILL_TOOL, SkillSet};

/// Arguments of `skill`.
#[derive(Deserialize, JsonSchema)]
pub struct SkillArgs {
    /// The skill's name, as the list in this tool's description gives it.
    name: String,
}

/// The `skill` tool over the skills an agent sees.
pub struct SkillTool {
    spec: ToolSpec,
    skills: SkillSet,
}

impl SkillTool {
    pub fn new(skills: SkillSet) -> Self {
        Self {
            spec: ToolSpec {
                name: SKILL_TOOL.into(),
                description: description(&skills),
                input_schema: input_schema::<SkillArgs>(),
            },
            skills,
        }
    }
}

/// The tool's description: what skills are, then the bounded listing.
fn description(skills: &SkillSet) -> String {
    let mut text = String::from(
        "Load a skill: instructions for one kind of task, packaged in a folder with any \
         scripts, templates or references they need. When the task at hand matches a skill's \
         description, call this tool with the skill's name before starting on it, then follow \
         the instructions it returns. Files the instructions mention are in the skill's folder \
         (the result gives its path): read them or run its scripts from there when the \
         instructions say so. Do not call it for a skill already loaded in this \
         conversation.\n\n<available_skills>\n",
    );
    let mut listed = 0usize;
    let mut used = 0usize;
    for skill in skills.iter() {
        let described: String = skill
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(MAX_DESCRIPTION_CHARS)
            .collect();
        let entry = format!(
            "<skill>\n<name>{}</name>\n<description>{described}</description>\n</skill>\n",
            skill.name
        );
        if used + entry.len() > MAX_LISTING_BYTES {
            break;
        }
        used += entry.len();
        listed += 1;
        text.push_str(&entry);
    }
    text.push_str("</available_skills>");
    let left = skills.iter().count() - listed;
    if left > 0 {
        text.push_str(&format!(
            "\n({left} more skills are installed but not listed here, for length.)"
        ));
    }
    text
}

impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn accepts(&self, arguments: &Value) -> Option<bool> {
        Some(parse_args::<SkillArgs>(SKILL_TOOL, arguments.clone()).is_ok())
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: SkillArgs = parse_args(SKILL_TOOL, arguments)?;
            let name = args.name.trim().trim_start_matches('/');
            let Some(skill) = self.skills.get(name).cloned() else {
                let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
                return Err(ToolError::Failed(format!(
                    "there is no skill `{name}`; the skills are: {}",
                    known.join(", ")
                )));
            };
            let body = tokio::task::spawn_blocking(move || skill.body().map(|b| (skill, b)))
                .await
                .map_err(|e| ToolError::Failed(format!("could not read the skill: {e}")))?;
            let (skill, body) = body.map_err(|e| {
                ToolError::Failed(format!("could not load the skill `{name}`: {e}"))
            })?;
            let dir = skill.dir.display();
            Ok(ToolOutput::text(
                format!("skill {}", skill.name),
                format!(
                    "<skill name=\"{}\">\nThe skill's folder is {dir}: paths in these \
                     instructions are relative to it.\n\n{body}\n</skill>",
                    skill.name
                ),
            ))
        })
    }
}
