//! The coding agents' hook payloads (`airlock-hooks`: what `/v1/hooks/{agent}` and
//! `airlock hook …` read), on any text: never a panic; a payload that parses names a tool
//! and has object arguments; its translation, when there is one, is an object under a
//! non-empty tool name that keeps the native name; every verdict renders for every event.

#![no_main]

use airlock_hooks::{canonical, render, Agent, HookEvent, Verdict};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    for agent in Agent::ALL {
        if let Ok(call) = agent.parse(text) {
            assert!(!call.native_tool.trim().is_empty());
            assert!(call.input.is_object());
            if let Ok(translated) = canonical(&call) {
                assert!(!translated.tool.is_empty());
                assert!(translated.arguments.is_object());
                assert_eq!(translated.native_tool, call.native_tool);
            }
        }
        let _ = agent.event_of(text);
        let verdict = if text.len() % 2 == 0 {
            Verdict::Allow { reason: text.to_owned() }
        } else {
            Verdict::Deny { reason: text.to_owned() }
        };
        for event in [
            HookEvent::PreToolUse,
            HookEvent::PermissionRequest,
            HookEvent::BeforeTool,
            HookEvent::PostToolUse,
            HookEvent::AfterTool,
        ] {
            let _ = render(agent, event, &verdict);
        }
    }
    // The patch reader on its own: every change it returns names at least one path.
    if let Ok(changes) = airlock_hooks::patch::parse(text) {
        assert!(!changes.is_empty());
        assert!(changes.iter().all(|change| !change.paths().is_empty()));
    }
});
