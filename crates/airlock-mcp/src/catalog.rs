//! What the real server says about its tools: the annotations (`readOnlyHint`,
//! `destructiveHint`) of every tool its `tools/list` named, which the proxy sends with each
//! gated call so that a tool the policy does not list gets a risk (DESIGN.md §4: unlisted
//! tools are `exec` unless their server declares them read-only).
//!
//! Filled from every `tools/list` answer the proxy relays, emptied when the server says
//! its list changed, and refilled by the proxy itself when a call names a tool it has not
//! seen (a client may call without listing, or list only the first page).

use crate::gate::Hints;
use rmcp::model::Tool;
use std::collections::HashMap;
use std::sync::Mutex;

/// Tool name → its hints, for the tools the server listed since its list last changed.
#[derive(Debug, Default)]
pub struct Catalog {
    tools: Mutex<HashMap<String, Hints>>,
}

impl Catalog {
    /// Learns the tools of one `tools/list` page.
    pub fn record(&self, tools: &[Tool]) {
        let mut known = self.lock();
        for tool in tools {
            let hints = tool
                .annotations
                .as_ref()
                .map(|annotations| Hints {
                    read_only: annotations.read_only_hint,
                    destructive: annotations.destructive_hint,
                })
                .unwrap_or_default();
            known.insert(tool.name.to_string(), hints);
        }
    }

    /// The server's tool list changed: what we knew may be wrong now.
    pub fn forget(&self) {
        self.lock().clear();
    }

    /// The hints of `tool`, when the server listed it; `Some` with empty hints when it
    /// listed the tool without annotations.
    pub fn hints(&self, tool: &str) -> Option<Hints> {
        self.lock().get(tool).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Hints>> {
        // A panic while holding the lock cannot leave the map half-written (each insert is
        // whole), so a poisoned lock is still a good map.
        self.tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use rmcp::model::ToolAnnotations;
    use std::sync::Arc;

    fn tool(name: &'static str, annotations: Option<ToolAnnotations>) -> Tool {
        let mut tool = Tool::new(name, "a tool", Arc::new(serde_json::Map::new()));
        tool.annotations = annotations;
        tool
    }

    #[test]
    fn learns_hints_and_forgets_them_when_the_list_changes() {
        let catalog = Catalog::default();
        let mut read_only = ToolAnnotations::new();
        read_only.read_only_hint = Some(true);
        read_only.destructive_hint = Some(false);
        catalog.record(&[tool("echo", Some(read_only)), tool("plain", None)]);

        assert_eq!(
            catalog.hints("echo"),
            Some(Hints {
                read_only: Some(true),
                destructive: Some(false)
            })
        );
        let plain = catalog.hints("plain").unwrap();
        assert!(plain.is_empty());
        assert_eq!(catalog.hints("unlisted"), None);

        catalog.forget();
        assert_eq!(catalog.hints("echo"), None);
    }
}
