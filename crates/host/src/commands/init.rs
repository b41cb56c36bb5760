//! The built-in `init` command (`/init`, `gyre init`): a normal run whose
//! prompt asks the model to study the project and write or improve
//! `AGENTS.md`. Its edit goes through the permissions like any other (the
//! terminal UI shows it for approval).

use super::CustomCommand;

/// The prompt of `/init`.
pub const INIT_PROMPT: &str = "\
Study this project and write an AGENTS.md at its root: the instructions a coding agent (or a new \
contributor) needs to work here. If AGENTS.md exists, improve it instead: keep what is still \
true, fix what is wrong, add what is missing. Also take in what CLAUDE.md, GEMINI.md, \
.cursorrules, .github/copilot-instructions.md or a CONTRIBUTING file already say.

Look before you write: the build files (Cargo.toml, package.json, pyproject.toml, Makefile, \
go.mod, …), the CI configuration, the README and the layout of the source tree. Then write, \
briefly and concretely:
- the commands to build, test (all tests, and one test alone), lint and format, exactly as they \
are run here;
- the layout: what each top-level directory or package holds, where to start reading;
- the conventions a change must follow (style, naming, error handling, tests, commit messages) \
that the code or its configuration shows;
- anything surprising: required services or environment variables, generated files not to edit.

Only write what you verified in the project; no generic advice. Keep it short (well under 200 \
lines), in Markdown. Write the file with your tools, then say in two or three sentences what \
you wrote or changed.";

/// `init` as a command (files named `init` replace it).
pub fn command() -> CustomCommand {
    CustomCommand {
        name: "init".into(),
        description: "study the project and write or improve AGENTS.md".into(),
        argument_hint: Some("[FOCUS]".into()),
        model: None,
        agent: None,
        allowed_tools: Vec::new(),
        template: INIT_PROMPT.into(),
        source: None,
    }
}
