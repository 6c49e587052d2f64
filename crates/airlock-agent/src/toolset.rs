//! What an agent can use: its model (a provider built from its `llm` settings) and its
//! tools (the built-in ones it lists, plus those of its MCP servers), each with the risk,
//! target and preview the gate needs for tools the policy does not list.

use airlock_llm::{ClientOptions, LlmConfig, OpenAiClient, Provider, ScriptedProvider, ToolDef};
use airlock_mcp::McpHost;
use airlock_policy::CompiledTool;
use airlock_protocol::{Agent, Risk};
use airlock_tools::{Builtins, ToolContext};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Mutex;

/// The scenarios of `serve --demo`'s scripted agent (`base_url = "scripted:demo"`).
pub const DEMO_SCENARIOS: &str = include_str!("demo_scenarios.toml");

/// One tool an agent may call.
#[derive(Clone)]
pub struct AgentTool {
    pub def: ToolDef,
    /// What the gate uses when the policy does not list the tool.
    pub declared: Option<CompiledTool>,
    pub kind: ToolKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Builtin,
    Mcp,
    /// `task.create`: the runtime schedules a task for the agent itself.
    Task,
}

/// The name of the tool through which an agent schedules work for itself.
pub const TASK_CREATE: &str = "task.create";

/// `task.create`: an agent may schedule a task for itself, never with permissions —
/// standing rules are minted by people only.
pub(crate) fn task_create_spec() -> airlock_tools::ToolSpec {
    airlock_tools::ToolSpec {
        name: TASK_CREATE.into(),
        description: "Schedule a task: on the cron schedule (five fields, minute hour day-of-month month day-of-week, in the time zone given, UTC by default) a new run of this agent starts with the instructions as its message.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "instructions": {"type": "string"},
                "cron": {"type": "string"},
                "timezone": {"type": "string"},
            },
            "required": ["title", "instructions", "cron"],
            "additionalProperties": false,
        }),
        risk: Risk::Write,
        target: None,
        summary: Some("Schedule task {title} ({cron})".into()),
        body: Some("{instructions}".into()),
    }
}

/// Every tool the runtime provides itself, as the gate should see it where the policy is
/// silent.
pub fn declarations() -> Vec<(String, CompiledTool)> {
    Builtins::specs()
        .into_iter()
        .chain(std::iter::once(task_create_spec()))
        .filter_map(|spec| {
            let declared = CompiledTool::declare(
                spec.risk,
                spec.target.as_deref(),
                spec.summary.as_deref(),
                spec.body.as_deref(),
            )
            .ok()?;
            Some((spec.name, declared))
        })
        .collect()
}

/// An agent's model and tools, built once per agent settings and shared by its runs.
pub struct Toolset {
    pub provider: Arc<dyn Provider>,
    pub tools: HashMap<String, AgentTool>,
    pub mcp: Option<Arc<McpHost>>,
    pub context: ToolContext,
}

impl Toolset {
    pub fn defs(&self) -> Vec<ToolDef> {
        let mut defs: Vec<ToolDef> = self.tools.values().map(|tool| tool.def.clone()).collect();
        defs.sort_by(|a, b| a.name.cmp(&b.name));
        defs
    }
}

/// How the runtime runs agents.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where an agent without `workspace_dir` works: `<root>/<agent name>`.
    pub workspace_root: PathBuf,
    /// Host globs `http.fetch` may reach.
    pub http_allow: Vec<String>,
    pub client: ClientOptionsSpec,
    /// Where the outbox's email goes; without it, email stays in the outbox.
    pub smtp: Option<airlock_tools::SmtpConfig>,
    /// Only this process uses the store (SQLite): every run found `running` at start
    /// belonged to a process that is gone and is taken over at once.
    pub single_node: bool,
    /// How often a live leg renews its run's lease while it waits on a model or a tool
    /// (a quarter of [`LEASE`](crate::LEASE) by default), so that no other node takes a
    /// run over from a node that is alive.
    pub lease_renewal: std::time::Duration,
}

impl RuntimeConfig {
    /// Defaults under a data folder.
    pub fn under(data_dir: &std::path::Path) -> RuntimeConfig {
        RuntimeConfig {
            workspace_root: data_dir.join("agents"),
            http_allow: Vec::new(),
            client: ClientOptionsSpec::default(),
            smtp: None,
            single_node: true,
            lease_renewal: crate::LEASE / 4,
        }
    }
}

/// The LLM client's timeouts and retries (a copyable mirror of `ClientOptions`).
#[derive(Debug, Clone, Copy)]
pub struct ClientOptionsSpec {
    /// The longest the model's server may stay silent: before it answers, and between
    /// two pieces of its answer (a model that keeps streaming is never cut off).
    pub idle_timeout: std::time::Duration,
    pub max_retries: u32,
    pub backoff: std::time::Duration,
}

impl Default for ClientOptionsSpec {
    fn default() -> Self {
        let options = ClientOptions::default();
        ClientOptionsSpec {
            idle_timeout: options.idle_timeout,
            max_retries: options.max_retries,
            backoff: options.backoff,
        }
    }
}

/// Toolsets by agent, rebuilt when the agent's settings change.
#[derive(Default)]
pub struct Toolsets {
    by_agent: Mutex<HashMap<String, (Agent, Arc<Toolset>)>>,
}

impl Toolsets {
    /// The toolset of this agent as it is now.
    pub async fn get(
        &self,
        agent: &Agent,
        settings: &RuntimeConfig,
    ) -> Result<Arc<Toolset>, String> {
        let mut cache = self.by_agent.lock().await;
        if let Some((cached, toolset)) = cache.get(&agent.id) {
            if cached == agent {
                return Ok(toolset.clone());
            }
        }
        let toolset = Arc::new(build(agent, settings).await?);
        if let Some((_, old)) = cache.insert(agent.id.clone(), (agent.clone(), toolset.clone())) {
            stop_mcp(old);
        }
        Ok(toolset)
    }

    /// Stops every MCP server.
    pub async fn shutdown(&self) {
        let mut cache = self.by_agent.lock().await;
        for (_, (_, toolset)) in cache.drain() {
            stop_mcp(toolset);
        }
    }
}

fn stop_mcp(toolset: Arc<Toolset>) {
    // Every clone of a host shares its servers: stopping one stops them for all.
    if let Some(host) = &toolset.mcp {
        tokio::spawn(host.as_ref().clone().shutdown());
    }
}

async fn build(agent: &Agent, settings: &RuntimeConfig) -> Result<Toolset, String> {
    let llm = agent.llm.as_ref().ok_or_else(|| {
        format!(
            "agent `{}` has no `llm` settings; set them with PATCH /v1/agents/{}",
            agent.name, agent.id
        )
    })?;
    let provider = provider(llm, settings)?;
    let mut tools = HashMap::new();
    let specs = Builtins::specs()
        .into_iter()
        .map(|spec| (spec, ToolKind::Builtin))
        .chain(std::iter::once((task_create_spec(), ToolKind::Task)));
    for (spec, kind) in specs {
        let listed = agent
            .tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|name| name == &spec.name));
        if !listed {
            continue;
        }
        let declared = CompiledTool::declare(
            spec.risk,
            spec.target.as_deref(),
            spec.summary.as_deref(),
            spec.body.as_deref(),
        )
        .map_err(|error| format!("tool {}: {error}", spec.name))?;
        tools.insert(
            spec.name.clone(),
            AgentTool {
                def: ToolDef {
                    name: spec.name,
                    description: spec.description,
                    parameters: spec.parameters,
                },
                declared: Some(declared),
                kind,
            },
        );
    }
    let mut mcp = None;
    if let Some(servers) = agent.mcp_servers.as_ref().filter(|s| !s.is_empty()) {
        let host = McpHost::start(servers).await;
        for error in host.errors() {
            tracing::warn!(agent = %agent.name, %error, "an MCP server of the agent did not start");
        }
        for tool in host.tools() {
            // Annotations inform the risk of a tool the policy does not list; anything
            // not declared read-only is `exec` (fail closed).
            let risk = if tool.read_only_hint == Some(true) {
                Risk::Read
            } else {
                Risk::Exec
            };
            tools.insert(
                tool.name.clone(),
                AgentTool {
                    def: ToolDef {
                        name: tool.name.clone(),
                        description: tool.description.clone(),
                        parameters: tool.input_schema.clone(),
                    },
                    declared: CompiledTool::declare(risk, None, None, None).ok(),
                    kind: ToolKind::Mcp,
                },
            );
        }
        mcp = Some(Arc::new(host));
    }
    let workspace_dir = match &agent.workspace_dir {
        Some(dir) => PathBuf::from(dir),
        None => settings.workspace_root.join(&agent.name),
    };
    std::fs::create_dir_all(&workspace_dir).map_err(|error| {
        format!(
            "cannot create the agent's workspace folder {}: {error}",
            workspace_dir.display()
        )
    })?;
    Ok(Toolset {
        provider,
        tools,
        mcp,
        context: ToolContext {
            workspace_dir,
            http_allow: settings.http_allow.clone(),
            limits: Default::default(),
        },
    })
}

/// `scripted:demo` and `scripted:<file>` replay TOML scenarios; anything else is an
/// OpenAI-compatible endpoint.
fn provider(llm: &LlmConfig, settings: &RuntimeConfig) -> Result<Arc<dyn Provider>, String> {
    if let Some(source) = llm.base_url.strip_prefix("scripted:") {
        let scripted = if source == "demo" {
            ScriptedProvider::from_toml(DEMO_SCENARIOS)
        } else {
            ScriptedProvider::load(std::path::Path::new(source))
        };
        return scripted
            .map(|provider| Arc::new(provider) as Arc<dyn Provider>)
            .map_err(|error| format!("scripted scenarios {source}: {error}"));
    }
    let options = ClientOptions {
        idle_timeout: settings.client.idle_timeout,
        max_retries: settings.client.max_retries,
        backoff: settings.client.backoff,
    };
    OpenAiClient::new(llm, options)
        .map(|client| Arc::new(client) as Arc<dyn Provider>)
        .map_err(|error| format!("LLM settings: {error}"))
}
