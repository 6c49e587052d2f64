//! Where a hook call happens (DESIGN.md §11.2): its `cwd`, its `project` (the root of the
//! git work tree holding `cwd`, else `cwd`, unless that is a folder where applications
//! keep their settings, such as the editor's `User` folder) and the user's `home`, which
//! the policy's `{project}` and `{home}` anchors stand for.
//!
//! Sources, most trusted first:
//! - `airlock hook …` runs on the agent's machine and sends what it found there in the
//!   `Airlock-Project` and `Airlock-Home` headers (the server may run elsewhere);
//! - otherwise the server looks for the work tree itself, when the folder exists here
//!   (Claude Code's `http` hook posts straight to the server, usually on the same machine);
//! - the home folder also shows in the agent's `transcript_path` (`~/.claude/…`), and so
//!   does the folder Claude Code was started in (`~/.claude/projects/<folder>/`), the
//!   project when no work tree is seen and it holds `cwd`.
//!
//! Fail closed: a `cwd` that is missing or not absolute gives no place at all, so no rule
//! that names an anchor can allow the call. A project must hold the `cwd`, and it is never
//! `/` or the home folder itself (a dotfiles repository in `~` would otherwise make the
//! whole home "the project").

use airlock_hooks::payload::{home_from_transcript_at, launch_folder};
use airlock_hooks::HookCall;
use airlock_policy::matcher::path::{absolute_folder, application_settings_folder, folder_holds};
use axum::http::HeaderMap;
use std::path::Path;

pub use airlock_hooks::place::{work_tree_of, HOME_HEADER, PROJECT_HEADER};

/// A hook call's place; every field is an absolute path without a trailing slash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    pub cwd: Option<String>,
    pub project: Option<String>,
    pub home: Option<String>,
}

impl Place {
    pub fn of(call: &HookCall, headers: &HeaderMap) -> Place {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .and_then(absolute_folder)
        };
        let home = header(HOME_HEADER).or_else(|| {
            call.transcript_path
                .as_deref()
                .and_then(|transcript| home_from_transcript_at(transcript, call.cwd.as_deref()))
                .and_then(|home| absolute_folder(&home))
        });
        let Some(cwd) = call.cwd.as_deref().and_then(absolute_folder) else {
            return Place {
                home,
                ..Place::default()
            };
        };
        // A folder where applications keep their settings (the editor's `User` folder) is
        // no project unless a work tree says so.
        let settings = |folder: &String| application_settings_folder(folder, home.as_deref());
        let project = header(PROJECT_HEADER)
            .filter(|project| folder_holds(project, &cwd))
            .or_else(|| work_tree_of(Path::new(&cwd)))
            .or_else(|| {
                call.transcript_path
                    .as_deref()
                    .and_then(|transcript| launch_folder(transcript, &cwd))
                    .filter(|folder| !settings(folder))
            })
            .filter(|project| project != "/" && Some(project) != home.as_ref())
            .or_else(|| Some(cwd.clone()).filter(|cwd| !settings(cwd)));
        Place {
            cwd: Some(cwd),
            project,
            home,
        }
    }
}

/// The project of a call that names only its `cwd` (`POST /v1/calls`): the git work tree
/// holding it when the folder exists on this machine, else none (the gate then takes the
/// `cwd` itself). Never `/`.
pub fn project_of(cwd: &str) -> Option<String> {
    absolute_folder(cwd)
        .and_then(|cwd| work_tree_of(Path::new(&cwd)))
        .filter(|project| project != "/")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use airlock_hooks::Agent;
    use serde_json::json;

    fn call(cwd: Option<&str>, transcript: Option<&str>) -> HookCall {
        let mut payload = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        if let Some(cwd) = cwd {
            payload["cwd"] = cwd.into();
        }
        if let Some(transcript) = transcript {
            payload["transcript_path"] = transcript.into();
        }
        Agent::ClaudeCode.read(payload).unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn the_work_tree_holding_cwd_is_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("shop");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        let cwd = root.join("src/deep");
        let place = Place::of(&call(Some(cwd.to_str().unwrap()), None), &HeaderMap::new());
        assert_eq!(place.project.as_deref(), root.to_str());
        assert_eq!(place.cwd.as_deref(), cwd.to_str());
        // A folder outside any work tree is its own project.
        let loose = dir.path().join("loose");
        std::fs::create_dir_all(&loose).unwrap();
        let place = Place::of(&call(loose.to_str(), None), &HeaderMap::new());
        assert_eq!(place.project.as_deref(), loose.to_str());
    }

    #[test]
    fn a_claude_desktop_agent_session_works_in_its_outputs_folder() {
        let outputs = "/Users/ana/Library/Application Support/Claude/local-agent-mode-sessions/\
                       6a/51/local_2e/outputs";
        let transcript = "/Users/ana/.claude/projects/-Users-ana-Library-Application-Support-\
                          Claude-local-agent-mode-sessions-6a-51-local-2e-outputs/s.jsonl";
        let place = Place::of(&call(Some(outputs), Some(transcript)), &HeaderMap::new());
        assert_eq!(place.home.as_deref(), Some("/Users/ana"));
        assert_eq!(place.project.as_deref(), Some(outputs));
    }

    #[test]
    fn an_applications_settings_folder_is_no_project_without_a_work_tree() {
        let transcript =
            "/Users/ana/.claude/projects/-Users-ana-Library-Application-Support-Code-User/s.jsonl";
        let user = "/Users/ana/Library/Application Support/Code/User";
        let place = Place::of(&call(Some(user), Some(transcript)), &HeaderMap::new());
        assert_eq!(place.home.as_deref(), Some("/Users/ana"));
        assert_eq!(place.project, None);
        // A work tree the hook found there is one.
        let sent = headers(&[(PROJECT_HEADER, user)]);
        let place = Place::of(&call(Some(user), Some(transcript)), &sent);
        assert_eq!(place.project.as_deref(), Some(user));
        // Windows' AppData too; an ordinary folder of the home is still its own project.
        let roaming = "C:\\Users\\Ana\\AppData\\Roaming\\Code\\User";
        let sent = headers(&[(HOME_HEADER, "C:\\Users\\Ana")]);
        assert_eq!(Place::of(&call(Some(roaming), None), &sent).project, None);
        let notes = "C:\\Users\\Ana\\notes";
        assert_eq!(
            Place::of(&call(Some(notes), None), &sent)
                .project
                .as_deref(),
            Some(notes)
        );
    }

    #[test]
    fn a_windows_agents_folders_are_places_too() {
        let sent = headers(&[
            (PROJECT_HEADER, "E:\\Algo"),
            (HOME_HEADER, "C:\\Users\\Me\\"),
        ]);
        let place = Place::of(&call(Some("E:\\Algo\\backend\\"), None), &sent);
        assert_eq!(place.cwd.as_deref(), Some("E:\\Algo\\backend"));
        assert_eq!(place.project.as_deref(), Some("E:\\Algo"));
        assert_eq!(place.home.as_deref(), Some("C:\\Users\\Me"));
        // Without a header the cwd stands for the project; a relative one is no place.
        let place = Place::of(&call(Some("E:\\Algo"), None), &HeaderMap::new());
        assert_eq!(place.project.as_deref(), Some("E:\\Algo"));
        let place = Place::of(&call(Some("Algo\\backend"), None), &HeaderMap::new());
        assert_eq!(place, Place::default());
        // A project on another drive does not hold the cwd.
        let other = headers(&[(PROJECT_HEADER, "D:\\Algo")]);
        let place = Place::of(&call(Some("E:\\Algo\\x"), None), &other);
        assert_eq!(place.project.as_deref(), Some("E:\\Algo\\x"));
    }

    #[test]
    fn the_hook_commands_headers_are_used_when_they_hold_the_cwd() {
        let sent = headers(&[
            (PROJECT_HEADER, "/home/ana/shop"),
            (HOME_HEADER, "/home/ana/"),
        ]);
        let place = Place::of(&call(Some("/home/ana/shop/src"), None), &sent);
        assert_eq!(place.project.as_deref(), Some("/home/ana/shop"));
        assert_eq!(place.home.as_deref(), Some("/home/ana"));
        // A project that does not hold the cwd is ignored (the cwd stands in).
        let place = Place::of(&call(Some("/srv/other"), None), &sent);
        assert_eq!(place.project.as_deref(), Some("/srv/other"));
        // Neither the home folder nor `/` is ever the project.
        let home = headers(&[(PROJECT_HEADER, "/home/ana"), (HOME_HEADER, "/home/ana")]);
        let place = Place::of(&call(Some("/home/ana/notes"), None), &home);
        assert_eq!(place.project.as_deref(), Some("/home/ana/notes"));
        let root = headers(&[(PROJECT_HEADER, "/")]);
        let place = Place::of(&call(Some("/etc"), None), &root);
        assert_eq!(place.project.as_deref(), Some("/etc"));
    }

    #[test]
    fn claude_codes_launch_folder_is_the_project_when_no_work_tree_is_seen() {
        let place = Place::of(
            &call(
                Some("/Users/mi/app/sub"),
                Some("/Users/mi/.claude/projects/-Users-mi-app/s.jsonl"),
            ),
            &HeaderMap::new(),
        );
        assert_eq!(place.project.as_deref(), Some("/Users/mi/app"));
        // Never the home folder itself.
        let place = Place::of(
            &call(
                Some("/Users/mi/notes"),
                Some("/Users/mi/.claude/projects/-Users-mi/s.jsonl"),
            ),
            &HeaderMap::new(),
        );
        assert_eq!(place.project.as_deref(), Some("/Users/mi/notes"));
    }

    #[test]
    fn a_windows_transcript_path_gives_the_home_and_the_launch_folder() {
        let place = Place::of(
            &call(
                Some(r"C:\Users\yy\Coding\polydot\contracts"),
                Some(r"C:\Users\yy\.claude\projects\c--Users-yy-Coding-polydot\s.jsonl"),
            ),
            &HeaderMap::new(),
        );
        assert_eq!(place.home.as_deref(), Some(r"C:\Users\yy"));
        assert_eq!(
            place.project.as_deref(),
            Some(r"C:\Users\yy\Coding\polydot")
        );
        assert_eq!(
            place.cwd.as_deref(),
            Some(r"C:\Users\yy\Coding\polydot\contracts")
        );
    }

    #[test]
    fn no_absolute_cwd_means_no_place() {
        for cwd in [None, Some("relative/dir"), Some("~/shop"), Some("")] {
            let place = Place::of(
                &call(cwd, Some("/home/ana/.claude/projects/x/s.jsonl")),
                &headers(&[(PROJECT_HEADER, "/home/ana/shop")]),
            );
            assert_eq!(place.cwd, None, "{cwd:?}");
            assert_eq!(place.project, None, "{cwd:?}");
            // The home folder is still known from the transcript.
            assert_eq!(place.home.as_deref(), Some("/home/ana"), "{cwd:?}");
        }
    }
}
