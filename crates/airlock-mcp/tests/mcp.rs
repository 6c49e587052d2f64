//! airlock-mcp against real MCP servers from npm (`@modelcontextprotocol/server-filesystem`
//! and `server-everything`, run with `node`): the tool host of the agent runtime
//! ([`host`](mcp/host.rs)) and the proxy ([`proxy`](mcp/proxy.rs)). scripts/test.sh
//! installs the servers (`install_mcp_peers` in scripts/services.sh) and sets
//! `AIRLOCK_TEST_MCP_FILESYSTEM` and `AIRLOCK_TEST_MCP_EVERYTHING`; without them these
//! tests look in target/test-peers, and fail, never skip, when a server is missing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "mcp/host.rs"]
mod host;
#[path = "mcp/proxy.rs"]
mod proxy;

use std::path::PathBuf;

/// `dist/index.js` of the installed npm MCP server `package`: the package folder in
/// `variable`, or where scripts/test.sh installs it.
fn npm_server(package: &str, variable: &str) -> PathBuf {
    let folder = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/test-peers/node_modules/@modelcontextprotocol")
                .join(package)
        });
    let script = folder.join("dist/index.js");
    assert!(
        script.is_file(),
        "the MCP server {package} is not installed at {}: run scripts/test.sh, or \
         `npm install --prefix target/test-peers @modelcontextprotocol/{package}` and set \
         {variable} to the package folder",
        folder.display()
    );
    script
}
