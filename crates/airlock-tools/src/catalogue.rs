//! The catalogue: one [`ToolSpec`] per built-in tool.
//!
//! Every argument of every built-in tool is a required string, so the table below lists
//! argument names and descriptions and the JSON Schema is generated from it. Validation
//! ([`crate::plan`]) reads that generated schema, never the table, so what the model is
//! shown and what is enforced cannot drift apart.

use airlock_protocol::Risk;
use serde_json::{json, Map, Value};

use crate::Builtins;

/// What a tool is: what the model is told about it and what the policy needs to know.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The tool's name as the model calls it, such as `fs.read`.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object: `type: object`, `properties`, `required`,
    /// `additionalProperties: false`.
    pub parameters: Value,
    /// The tool's risk class.
    pub risk: Risk,
    /// The argument naming the call's target, to which standing rules bind.
    pub target: Option<String>,
    /// One-line preview template with `{arg}` placeholders.
    pub summary: Option<String>,
    /// Longer preview template with `{arg}` placeholders.
    pub body: Option<String>,
}

/// One row of the catalogue.
struct Entry {
    name: &'static str,
    description: &'static str,
    risk: Risk,
    target: Option<&'static str>,
    summary: Option<&'static str>,
    body: Option<&'static str>,
    /// (name, description) of each argument; all are required strings.
    arguments: &'static [(&'static str, &'static str)],
}

const CATALOGUE: &[Entry] = &[
    Entry {
        name: "clock.now",
        description: "Returns the current date and time in UTC (RFC 3339).",
        risk: Risk::Read,
        target: None,
        summary: Some("Read the clock"),
        body: None,
        arguments: &[],
    },
    Entry {
        name: "email.send",
        description: "Sends a plain-text email to one recipient.",
        risk: Risk::External,
        target: Some("to"),
        summary: Some("Send email to {to}"),
        body: Some("{body}"),
        arguments: &[
            (
                "to",
                "The recipient's address, one address such as alice@example.com.",
            ),
            ("subject", "The subject line."),
            ("body", "The message text."),
        ],
    },
    Entry {
        name: "http.fetch",
        description: "Fetches a URL with an HTTP GET and returns the status, content type and \
                      text body. Only allowed hosts can be reached; large bodies are truncated.",
        risk: Risk::Read,
        target: Some("url"),
        summary: Some("Fetch {url}"),
        body: None,
        arguments: &[("url", "The http:// or https:// URL to fetch.")],
    },
    Entry {
        name: "fs.read",
        description: "Reads a UTF-8 text file in the workspace directory. Large files are \
                      truncated.",
        risk: Risk::Read,
        target: Some("path"),
        summary: Some("Read {path}"),
        body: None,
        arguments: &[(
            "path",
            "The file's path, relative to the workspace directory.",
        )],
    },
    Entry {
        name: "fs.write",
        description: "Writes a text file in the workspace directory, replacing it if it exists \
                      and creating missing parent directories.",
        risk: Risk::Write,
        target: Some("path"),
        summary: Some("Write {path}"),
        body: Some("{content}"),
        arguments: &[
            (
                "path",
                "The file's path, relative to the workspace directory.",
            ),
            ("content", "The complete new text of the file."),
        ],
    },
    Entry {
        name: "shell.exec",
        description: "Runs a command with `sh -c` in the workspace directory and returns its \
                      exit code, standard output and standard error. Long-running commands \
                      are killed.",
        risk: Risk::Exec,
        // An exec tool never has a target: no standing rule may cover it (DESIGN.md §4.2).
        target: None,
        summary: Some("Run a shell command"),
        body: Some("{command}"),
        arguments: &[("command", "The shell command line.")],
    },
];

impl Builtins {
    /// All built-in tool specs: clock.now, email.send, http.fetch, fs.read, fs.write,
    /// shell.exec.
    pub fn specs() -> Vec<ToolSpec> {
        CATALOGUE.iter().map(Entry::spec).collect()
    }

    /// The spec of the built-in tool `name`, if there is one.
    pub fn spec(name: &str) -> Option<ToolSpec> {
        CATALOGUE
            .iter()
            .find(|entry| entry.name == name)
            .map(Entry::spec)
    }
}

impl Entry {
    fn spec(&self) -> ToolSpec {
        let mut properties = Map::new();
        for (name, description) in self.arguments {
            properties.insert(
                (*name).to_string(),
                json!({"type": "string", "description": description}),
            );
        }
        let required: Vec<&str> = self.arguments.iter().map(|(name, _)| *name).collect();
        ToolSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            }),
            risk: self.risk,
            target: self.target.map(str::to_string),
            summary: self.summary.map(str::to_string),
            body: self.body.map(str::to_string),
        }
    }
}
