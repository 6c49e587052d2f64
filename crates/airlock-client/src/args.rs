//! The options every client command takes, and the token they resolve to.

use clap::Args;
use std::path::PathBuf;

/// The options every client command takes (after the command name, anywhere).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Client options")]
pub struct ClientArgs {
    /// The airlock server to talk to.
    // `--help` does not show the environment's value: it may hold a password.
    #[arg(
        long,
        global = true,
        env = "AIRLOCK_URL",
        hide_env_values = true,
        default_value = "http://127.0.0.1:7070"
    )]
    pub url: String,
    /// Bearer token [default: the contents of DATA_DIR/owner.token when present].
    #[arg(long, global = true, env = "AIRLOCK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The data folder of a local `airlock serve`, whose owner.token is the default token.
    #[arg(long, global = true, default_value = "airlock-data")]
    pub data_dir: PathBuf,
    /// Print the API's JSON as it is, instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
}

impl ClientArgs {
    /// The token to send: an explicit one (flag or environment) wins, an empty one counts
    /// as none, else `DATA_DIR/owner.token` when it can be read.
    pub fn resolve_token(&self) -> Option<String> {
        self.token
            .clone()
            .filter(|token| !token.trim().is_empty())
            .or_else(|| std::fs::read_to_string(self.data_dir.join("owner.token")).ok())
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty())
    }

    /// The server's address without a trailing `/`: paths are appended to it.
    pub fn base(&self) -> String {
        self.url.trim_end_matches('/').to_owned()
    }
}
