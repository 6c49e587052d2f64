//! What coding agents send their hooks and what they read back, in one place, and the
//! translation of their native tool calls into airlock's canonical vocabulary
//! (DESIGN.md §11.1), so that one policy governs every agent.
//!
//! Pure but for [`place::work_tree_of`] (a look for `.git`): JSON in, values out. The
//! server's hook endpoints use it to read a payload and answer it; `airlock hook …` uses it
//! to read the payload's place, to name the call's key, and to print an agent's own deny
//! form when the server cannot be reached (fail closed); [`place`] holds the headers the
//! two speak in besides the payload.
//!
//! The stages, in the order a hook call goes through them:
//! 1. [`payload`] — read an agent's hook JSON ([`HookCall`]), leniently (agents add fields
//!    with every release) but never guessing at the tool or its arguments.
//! 2. [`translate`] — native tool → canonical call ([`Canonical`]): `Bash` →
//!    `shell.exec`, `apply_patch` → `fs.edit` of every file the patch touches ([`patch`]),
//!    and so on; unknown tools keep their name.
//! 3. [`render`] — the verdict in the agent's own output shape for the event that asked.
//! 4. [`edit`] — a person's edit of the canonical call carried back into the agent's own
//!    tool input (Claude Code's `updatedInput`), or `None` when it cannot be exactly.
//! 5. [`outcome`] — what an after-the-fact event (`PostToolUse`, `AfterTool`) reports, and
//!    the key tying one tool use's events together.

pub mod edit;
pub mod outcome;
pub mod patch;
pub mod payload;
pub mod place;
pub mod render;
pub mod translate;

pub use edit::native_input;
pub use outcome::{reported, tool_use_key, Reported};
pub use payload::{Agent, HookCall, HookEvent, PayloadError};
pub use render::{render, Verdict};
pub use translate::{canonical, Canonical, TranslateError};
