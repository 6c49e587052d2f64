//! Checking an agent's settings before they are saved (`POST /v1/agents`, `PATCH
//! /v1/agents/{id}`): the runtime registers [`check`] with the gate, so settings it could
//! not run are a 422 that names the field and what is wrong, not a 201 followed by runs
//! that fail or silently lack a tool.
//!
//! Field names are DESIGN.md §6's: `tools[i]`, `llm.base_url`, `llm.model`,
//! `llm.api_key_env`, `mcp_servers[i].name`, `mcp_servers[i].command`.

use crate::toolset::task_create_spec;
use airlock_llm::{LlmError, OpenAiClient};
use airlock_protocol::Agent;
use airlock_tools::Builtins;
use std::collections::HashSet;
use std::path::Path;

/// Why the agent's settings cannot run, the field named first; `Ok` when they can.
pub fn check(agent: &Agent) -> Result<(), String> {
    if let Some(tools) = &agent.tools {
        let known = tool_names();
        for (position, name) in tools.iter().enumerate() {
            if !known.iter().any(|known| known == name) {
                let hint = if name.starts_with("mcp__") {
                    " (an agent has every tool of its `mcp_servers`; `tools` lists built-in tools only)"
                } else {
                    ""
                };
                return Err(format!(
                    "tools[{position}]: unknown tool `{name}`; the built-in tools are {}{hint}",
                    known.join(", ")
                ));
            }
        }
    }
    if let Some(llm) = &agent.llm {
        if llm.base_url.trim() == "scripted:" {
            return Err("llm.base_url: `scripted:` needs a scenario file (`scripted:<file>`) or `scripted:demo`".into());
        }
        if !llm.base_url.starts_with("scripted:") {
            OpenAiClient::check_base_url(&llm.base_url).map_err(|error| match error {
                LlmError::Config(why) => format!("llm.base_url: {why}"),
                other => format!("llm.base_url: {other}"),
            })?;
        }
        if llm.model.trim().is_empty() {
            return Err("llm.model: the model name is empty".into());
        }
        if let Some(variable) = &llm.api_key_env {
            if !is_variable_name(variable) {
                return Err(format!(
                    "llm.api_key_env: `{variable}` is not an environment variable name (letters, digits and `_`, not starting with a digit); it names the variable that holds the key, never the key itself"
                ));
            }
        }
    }
    let mut names = HashSet::new();
    for (position, server) in agent.mcp_servers.iter().flatten().enumerate() {
        let name = &server.name;
        if !airlock_mcp::is_server_name(name) {
            return Err(format!(
                "mcp_servers[{position}].name: `{name}` must be lower-case letters, digits, `_` and `-`"
            ));
        }
        if !names.insert(name.as_str()) {
            return Err(format!(
                "mcp_servers[{position}].name: `{name}` names another server of the agent too"
            ));
        }
        if let Some(why) = command_problem(&server.command) {
            return Err(format!("mcp_servers[{position}].command: {why}"));
        }
    }
    Ok(())
}

/// Every tool name `tools` may list: the built-in tools and `task.create`, sorted.
fn tool_names() -> Vec<String> {
    let mut names: Vec<String> = Builtins::specs()
        .into_iter()
        .map(|spec| spec.name)
        .chain(std::iter::once(task_create_spec().name))
        .collect();
    names.sort();
    names
}

fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

/// Why `command` cannot start an MCP server here: empty, a path to no file, or a name on
/// no folder of `PATH` (the server's own, which the MCP server inherits).
fn command_problem(command: &str) -> Option<String> {
    if command.trim().is_empty() {
        return Some("the command is empty".into());
    }
    if command.contains(std::path::MAIN_SEPARATOR) || command.contains('/') {
        return (!Path::new(command).is_file()).then(|| format!("`{command}` is not a file"));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|folder| folder.join(command).is_file());
    (!found).then(|| format!("`{command}` is in no folder of the server's PATH"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use airlock_protocol::{LlmConfig, McpServerConfig};

    fn agent() -> Agent {
        Agent {
            id: "agt_1".into(),
            name: "helper".into(),
            mode: Default::default(),
            system_prompt: None,
            tools: Some(vec!["clock.now".into(), "task.create".into()]),
            workspace_dir: None,
            llm: Some(LlmConfig {
                base_url: "http://127.0.0.1:8080/v1".into(),
                model: "m".into(),
                api_key_env: Some("OPENAI_API_KEY".into()),
                stream: None,
            }),
            mcp_servers: Some(vec![McpServerConfig {
                name: "fs".into(),
                command: "sh".into(),
                args: Vec::new(),
            }]),
            created_at: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    #[test]
    fn good_settings_pass() {
        assert_eq!(check(&agent()), Ok(()));
        let mut scripted = agent();
        scripted.llm.as_mut().unwrap().base_url = "scripted:demo".into();
        assert_eq!(check(&scripted), Ok(()));
    }

    /// A change that spoils one field of good settings.
    type Spoil = fn(&mut Agent);

    #[test]
    fn each_bad_field_is_named() {
        let cases: Vec<(Spoil, &str)> = vec![
            (
                |a| a.tools = Some(vec!["clock.now".into(), "email.sned".into()]),
                "tools[1]: unknown tool `email.sned`",
            ),
            (
                |a| a.llm.as_mut().unwrap().base_url = "ftp://x/v1".into(),
                "llm.base_url: bad base URL `ftp://x/v1`",
            ),
            (
                |a| a.llm.as_mut().unwrap().base_url = "scripted:".into(),
                "llm.base_url: `scripted:`",
            ),
            (
                |a| a.llm.as_mut().unwrap().model = " ".into(),
                "llm.model: the model name is empty",
            ),
            (
                |a| a.llm.as_mut().unwrap().api_key_env = Some("sk-abc".into()),
                "llm.api_key_env:",
            ),
            (
                |a| a.mcp_servers.as_mut().unwrap()[0].name = "Bad Name".into(),
                "mcp_servers[0].name: `Bad Name`",
            ),
            (
                |a| a.mcp_servers.as_mut().unwrap()[0].command = "/nonexistent/server".into(),
                "mcp_servers[0].command: `/nonexistent/server` is not a file",
            ),
            (
                |a| a.mcp_servers.as_mut().unwrap()[0].command = "no-such-command-here".into(),
                "mcp_servers[0].command: `no-such-command-here` is in no folder",
            ),
            (
                |a| {
                    let first = a.mcp_servers.as_ref().unwrap()[0].clone();
                    a.mcp_servers.as_mut().unwrap().push(first);
                },
                "mcp_servers[1].name: `fs` names another server",
            ),
        ];
        for (spoil, expected) in cases {
            let mut spoiled = agent();
            spoil(&mut spoiled);
            let error = check(&spoiled).unwrap_err();
            assert!(error.starts_with(expected), "{error}\nexpected: {expected}");
        }
    }
}
