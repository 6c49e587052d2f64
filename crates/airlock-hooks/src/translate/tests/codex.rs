//! Codex's calls: its shell tools and their folders, its patches (given whole, as an argv,
//! or as a here-document after at most a `cd`), PowerShell's argv, and its polls.

use super::*;

#[test]
fn codex_tools() {
    use Agent::Codex as X;
    check(
        X,
        "Bash",
        json!({"command": "ls -la"}),
        "shell.exec",
        json!({"command": "ls -la", "cwd": "/home/ana/demo"}),
    );
    check(
        X,
        "shell",
        json!({"command": ["bash", "-lc", "git status && ls"], "workdir": "sub", "timeout_ms": 1000}),
        "shell.exec",
        json!({"command": "git status && ls", "cwd": "/home/ana/demo/sub", "timeout_ms": 1000}),
    );
    // Codex on Windows starts PowerShell with its script as one argument: the script is
    // what runs, read as PowerShell.
    check(
        X,
        "shell",
        json!({"command": ["powershell.exe", "-NoProfile", "-ExecutionPolicy", "Bypass", "-Command", "Get-Content -LiteralPath 'a.js' | Select-Object -First 5"], "workdir": "C:\\w"}),
        "shell.exec",
        json!({"command": "Get-Content -LiteralPath 'a.js' | Select-Object -First 5", "cwd": "C:\\w", "shell": "powershell"}),
    );
    // An option that is not known to be harmless keeps the whole line.
    check(
        X,
        "shell",
        json!({"command": ["pwsh", "-EncodedCommand", "ZQBjAGgAbwA="], "workdir": "/abs"}),
        "shell.exec",
        json!({"command": "pwsh -EncodedCommand ZQBjAGgAbwA=", "cwd": "/abs"}),
    );
    check(
        X,
        "shell",
        json!({"command": ["rg", "-n", "fn main", "src"], "workdir": "/abs"}),
        "shell.exec",
        json!({"command": "rg -n 'fn main' src", "cwd": "/abs"}),
    );
    check(
        X,
        "exec_command",
        json!({"cmd": "cargo build", "yield_time_ms": 10}),
        "shell.exec",
        json!({"command": "cargo build", "cwd": "/home/ana/demo", "yield_time_ms": 10}),
    );
    check(
        X,
        "read_file",
        json!({"path": "src/lib.rs"}),
        "fs.read",
        json!({"path": "src/lib.rs"}),
    );
    check(
        X,
        "list_dir",
        json!({"dir_path": "/home/ana/demo/src", "depth": 2}),
        "fs.list",
        json!({"path": "/home/ana/demo/src", "depth": 2}),
    );
    check(
        X,
        "grep_files",
        json!({"pattern": "TODO", "include": "*.rs"}),
        "fs.search",
        json!({"pattern": "TODO", "path": "/home/ana/demo", "include": "*.rs"}),
    );
    check(
        X,
        "web_search",
        json!({"query": "x"}),
        "web.search",
        json!({"query": "x"}),
    );
    check(
        X,
        "update_plan",
        json!({"plan": []}),
        "agent.internal",
        json!({"plan": []}),
    );
    // Its sub-agents: their own calls pass through the hook.
    let spawn = json!({"agent_type": "architect", "message": "Review the plan"});
    check(X, "spawn_agent", spawn.clone(), "agent.internal", spawn);
    let wait = json!({"targets": ["019d52ee"], "timeout_ms": 300000});
    check(X, "wait_agent", wait.clone(), "agent.internal", wait);
    // Its MCP servers' resources listed and read, as Gemini CLI's are.
    let resource = json!({"server": "figma", "uri": "file://figma/docs/a.md"});
    check(
        X,
        "read_mcp_resource",
        resource.clone(),
        "agent.internal",
        resource,
    );
    check(
        X,
        "list_mcp_resource_templates",
        json!({}),
        "agent.internal",
        json!({}),
    );
}

#[test]
fn codex_patches_name_every_file_they_touch() {
    let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: /etc/cron.d/x\n+* * * * * root sh\n*** End Patch";
    let want = json!({"paths": ["src/a.rs", "/etc/cron.d/x"], "patch": patch});
    check(
        Agent::Codex,
        "apply_patch",
        json!({"command": patch}),
        "fs.edit",
        want.clone(),
    );
    check(
        Agent::Codex,
        "apply_patch",
        json!({"input": patch}),
        "fs.edit",
        want.clone(),
    );
    // The shell tool with an apply_patch argv is the same edit.
    check(
        Agent::Codex,
        "shell",
        json!({"command": ["apply_patch", patch]}),
        "fs.edit",
        want,
    );
    // One file: `path` too, so single-path rules apply.
    let one = "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch";
    check(
        Agent::Codex,
        "apply_patch",
        json!({"command": one}),
        "fs.edit",
        json!({"path": "old.txt", "paths": ["old.txt"], "patch": one}),
    );
    // A malformed patch is never guessed at.
    for input in [
        json!({"command": "rm -rf /"}),
        json!({"command": "*** Begin Patch\n*** End Patch"}),
        json!({}),
        json!({"command": 7}),
    ] {
        let error = canonical(&call(Agent::Codex, "apply_patch", input.clone())).unwrap_err();
        assert!(error.0.contains("patch"), "{input}: {error}");
    }
}

#[test]
fn codex_here_document_patches_are_edits_of_their_files() {
    let patch = "*** Begin Patch\n*** Update File: src/App.tsx\n@@\n-a\n+b\n*** End Patch";
    let script = format!("apply_patch <<'PATCH'\n{patch}\nPATCH");
    // As Codex's `shell` tool sends it, with no workdir: paths stay relative to the cwd.
    check(
        Agent::Codex,
        "shell",
        json!({"command": ["bash", "-lc", script], "timeout_ms": 120000}),
        "fs.edit",
        json!({"path": "src/App.tsx", "paths": ["src/App.tsx"], "patch": patch, "timeout_ms": 120000}),
    );
    // A workdir other than the cwd: the paths are written out against it.
    check(
        Agent::Codex,
        "exec_command",
        json!({"cmd": script, "workdir": "/home/ana/other"}),
        "fs.edit",
        json!({"path": "/home/ana/other/src/App.tsx", "paths": ["/home/ana/other/src/App.tsx"],
               "patch": patch, "workdir": "/home/ana/other"}),
    );
    check(
        Agent::Codex,
        "Bash",
        json!({"command": script}),
        "fs.edit",
        json!({"path": "src/App.tsx", "paths": ["src/App.tsx"], "patch": patch}),
    );
    // After `cd DIR &&`, Codex applies the patch in DIR: absolute, or below the workdir.
    check(
        Agent::Codex,
        "shell",
        json!({"command": ["bash", "-lc", format!("cd /srv/site && {script}")]}),
        "fs.edit",
        json!({"path": "/srv/site/src/App.tsx", "paths": ["/srv/site/src/App.tsx"], "patch": patch}),
    );
    check(
        Agent::Codex,
        "shell_command",
        json!({"command": format!("cd web && {script}"), "workdir": "/home/ana/demo"}),
        "fs.edit",
        json!({"path": "/home/ana/demo/web/src/App.tsx", "paths": ["/home/ana/demo/web/src/App.tsx"],
               "patch": patch, "workdir": "/home/ana/demo"}),
    );
    // Claude Code has no apply_patch: the same script is a shell command there.
    check(
        Agent::ClaudeCode,
        "Bash",
        json!({"command": script}),
        "shell.exec",
        json!({"command": script, "cwd": "/home/ana/demo"}),
    );
    // A here-document with more commands after it is judged as the shell command it is.
    let more = format!("{script}\nrm -rf ~");
    let got = canonical(&call(
        Agent::Codex,
        "shell",
        json!({"command": ["bash", "-lc", more]}),
    ))
    .unwrap();
    assert_eq!(got.tool, "shell.exec");
    // A lone here-document whose patch cannot be read is not guessed at.
    let bad = "apply_patch <<'PATCH'\n*** Begin Patch\nnonsense\n*** End Patch\nPATCH";
    assert!(canonical(&call(
        Agent::Codex,
        "shell",
        json!({"command": ["bash", "-lc", bad]})
    ))
    .is_err());
}

#[test]
fn a_codex_shell_call_runs_in_the_folder_it_names() {
    use Agent::Codex as X;
    check(
        X,
        "Bash",
        json!({"command": "rm -rf build", "workdir": "/etc"}),
        "shell.exec",
        json!({"command": "rm -rf build", "cwd": "/etc"}),
    );
    check(
        X,
        "Bash",
        json!({"command": "make", "workdir": "sub"}),
        "shell.exec",
        json!({"command": "make", "cwd": "/home/ana/demo/sub"}),
    );
    check(
        X,
        "Bash",
        json!({"command": "make", "cwd": "/srv/app"}),
        "shell.exec",
        json!({"command": "make", "cwd": "/srv/app"}),
    );
    // A Windows folder is written from its drive or share, not below the session's.
    for folder in ["D:\\work\\ledger", "d:/work/ledger", "\\\\server\\share\\x"] {
        check(
            X,
            "shell_command",
            json!({"command": "dir", "workdir": folder}),
            "shell.exec",
            json!({"command": "dir", "cwd": folder}),
        );
    }
    check(
        X,
        "exec_command",
        json!({"cmd": "ls", "cwd": "/srv"}),
        "shell.exec",
        json!({"command": "ls", "cwd": "/srv"}),
    );
}

#[test]
fn a_codex_poll_of_a_running_command_is_bookkeeping_and_typed_input_is_not() {
    let poll = json!({"session_id": 29680, "chars": "", "yield_time_ms": 1000});
    check(
        Agent::Codex,
        "write_stdin",
        poll.clone(),
        "agent.internal",
        poll,
    );
    // An interrupt or end of input stops Codex's own command.
    for chars in ["\u{3}", "\u{4}", "\u{3}\u{3}"] {
        let stop = json!({"session_id": 2177, "chars": chars});
        check(
            Agent::Codex,
            "write_stdin",
            stop.clone(),
            "agent.internal",
            stop,
        );
    }
    let interrupt_then_text = json!({"session_id": 2177, "chars": "\u{3}rm -rf ~\n"});
    check(
        Agent::Codex,
        "write_stdin",
        interrupt_then_text.clone(),
        "write_stdin",
        interrupt_then_text,
    );
    let typed = json!({"session_id": 29680, "chars": "rm -rf ~\n"});
    check(
        Agent::Codex,
        "write_stdin",
        typed.clone(),
        "write_stdin",
        typed,
    );
    // No `chars` at all is not known to be a poll.
    let bare = json!({"session_id": 1});
    check(
        Agent::Codex,
        "write_stdin",
        bare.clone(),
        "write_stdin",
        bare,
    );
}
