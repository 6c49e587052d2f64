//! The coding agents' hook payload parsers (`airlock hook claude-code|codex|gemini`), on
//! any text: never a panic; a payload that parses names a tool and has object arguments;
//! every verdict renders.

#![no_main]

// The binary crate has no library: include its pure, I/O-free payload module as is.
#[path = "../../crates/airlock-cli/src/commands/hook/shapes.rs"]
#[allow(dead_code)]
mod shapes;

use libfuzzer_sys::fuzz_target;
use shapes::Agent;

fuzz_target!(|text: &str| {
    for agent in [Agent::ClaudeCode, Agent::Codex, Agent::Gemini] {
        if let Ok(call) = agent.parse(text) {
            assert!(!call.tool.trim().is_empty());
            assert!(call.arguments.is_object());
        }
        let _ = agent.render(text.len() % 2 == 0, text);
    }
});
