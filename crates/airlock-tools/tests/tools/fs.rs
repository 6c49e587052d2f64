//! `fs.read` and `fs.write`: inside the workspace they work; nothing gets them outside.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::json;

use super::{context, error_of, run};

/// A workspace and, beside it, an outside directory holding `secret.txt`.
struct Fixture {
    _root: tempfile::TempDir,
    workspace: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("workspace");
    let outside = root.path().join("outside");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "outside secret").unwrap();
    Fixture {
        _root: root,
        workspace,
        outside,
    }
}

/// Every file under `directory`, relative to it, sorted.
fn files_under(directory: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                pending.push(path.clone());
            }
            found.push(path.strip_prefix(directory).unwrap().display().to_string());
        }
    }
    found.sort();
    found
}

#[tokio::test]
async fn read_and_write_inside_the_workspace() {
    let fixture = fixture();
    let context = context(&fixture.workspace);

    let output = run(
        "fs.write",
        json!({"path": "notes/q3/plan.md", "content": "héllo\n"}),
        &context,
    )
    .await;
    assert_eq!(
        output.output,
        json!({"path": "notes/q3/plan.md", "bytes": 7})
    );
    assert!(output.ok);
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.join("notes/q3/plan.md")).unwrap(),
        "héllo\n"
    );

    let output = run(
        "fs.read",
        json!({"path": "./notes/../notes/q3/plan.md"}),
        &context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(
        output.output,
        json!({"path": "notes/q3/plan.md", "content": "héllo\n", "truncated": false})
    );

    // An absolute path into the workspace is the same file.
    let absolute = fixture.workspace.join("notes/q3/plan.md");
    let output = run(
        "fs.write",
        json!({"path": absolute.to_str().unwrap(), "content": "v2"}),
        &context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(std::fs::read_to_string(&absolute).unwrap(), "v2");

    // A symlink that stays inside is followed.
    symlink(
        fixture.workspace.join("notes"),
        fixture.workspace.join("docs"),
    )
    .unwrap();
    let output = run("fs.read", json!({"path": "docs/q3/plan.md"}), &context).await;
    assert_eq!(output.output["content"], "v2", "{output:?}");
    let output = run(
        "fs.write",
        json!({"path": "docs/q3/plan.md", "content": "v3"}),
        &context,
    )
    .await;
    assert!(output.ok, "{output:?}");
    assert_eq!(std::fs::read_to_string(&absolute).unwrap(), "v3");
}

#[tokio::test]
async fn paths_that_leave_the_workspace_are_refused_and_nothing_is_written_outside() {
    let fixture = fixture();
    let context = context(&fixture.workspace);
    symlink("/etc", fixture.workspace.join("etc")).unwrap();
    symlink(&fixture.outside, fixture.workspace.join("out")).unwrap();
    symlink(
        fixture.outside.join("secret.txt"),
        fixture.workspace.join("secret-link.txt"),
    )
    .unwrap();
    symlink(
        fixture.outside.join("planted.txt"),
        fixture.workspace.join("dangling.txt"),
    )
    .unwrap();
    let before_outside = files_under(&fixture.outside);
    let before_parent = files_under(fixture.workspace.parent().unwrap());

    let reads = [
        (
            "../outside/secret.txt",
            "../outside/secret.txt leads outside the workspace",
        ),
        ("/etc/passwd", "/etc/passwd is outside the workspace"),
        (
            "etc/passwd",
            "etc/passwd leads outside the workspace (through a symlink)",
        ),
        (
            "out/secret.txt",
            "out/secret.txt leads outside the workspace (through a symlink)",
        ),
        (
            "secret-link.txt",
            "secret-link.txt leads outside the workspace (through a symlink)",
        ),
        (
            "a/../../outside/secret.txt",
            "a/../../outside/secret.txt leads outside the workspace",
        ),
    ];
    for (path, expected) in reads {
        let output = run("fs.read", json!({"path": path}), &context).await;
        assert_eq!(error_of(&output), expected, "fs.read {path}");
        assert!(!output.output.to_string().contains("outside secret"));
        assert!(!output.output.to_string().contains("root:"));
    }

    let writes = [
        (
            "../planted.txt",
            "../planted.txt leads outside the workspace",
        ),
        (
            "../outside/planted.txt",
            "../outside/planted.txt leads outside the workspace",
        ),
        (
            "/etc/airlock-tools-planted.txt",
            "/etc/airlock-tools-planted.txt is outside the workspace",
        ),
        (
            "etc/airlock-tools-planted.txt",
            "etc/airlock-tools-planted.txt leads outside the workspace (through a symlink)",
        ),
        (
            "out/planted.txt",
            "out/planted.txt leads outside the workspace (through a symlink)",
        ),
        (
            "out/new/dir/planted.txt",
            "out/new/dir/planted.txt leads outside the workspace (through a symlink)",
        ),
        (
            "secret-link.txt",
            "secret-link.txt leads outside the workspace (through a symlink)",
        ),
        (
            "dangling.txt",
            "dangling.txt is a symlink to a missing file; refusing to write through it",
        ),
    ];
    for (path, expected) in writes {
        let output = run(
            "fs.write",
            json!({"path": path, "content": "planted"}),
            &context,
        )
        .await;
        assert_eq!(error_of(&output), expected, "fs.write {path}");
    }

    assert_eq!(
        files_under(&fixture.outside),
        before_outside,
        "something was written outside"
    );
    assert_eq!(
        files_under(fixture.workspace.parent().unwrap()),
        before_parent
    );
    assert_eq!(
        std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
        "outside secret"
    );
    assert!(!Path::new("/etc/airlock-tools-planted.txt").exists());
}

#[tokio::test]
async fn directories_and_the_workspace_itself_are_not_files() {
    let fixture = fixture();
    let context = context(&fixture.workspace);
    std::fs::create_dir(fixture.workspace.join("dir")).unwrap();
    let output = run("fs.read", json!({"path": "dir"}), &context).await;
    assert_eq!(error_of(&output), "dir is a directory");
    let output = run("fs.write", json!({"path": "dir", "content": "x"}), &context).await;
    assert_eq!(error_of(&output), "dir is a directory");
    let output = run("fs.write", json!({"path": ".", "content": "x"}), &context).await;
    assert_eq!(
        error_of(&output),
        "path names the workspace directory itself, not a file"
    );
    let output = run("fs.read", json!({"path": "missing.txt"}), &context).await;
    assert_eq!(
        error_of(&output),
        "cannot read missing.txt: no such file or directory"
    );
}

#[tokio::test]
async fn sizes_are_capped_and_binary_files_refused() {
    let fixture = fixture();
    let mut context = context(&fixture.workspace);
    context.limits.fs_max_bytes = 10;

    std::fs::write(fixture.workspace.join("big.txt"), "0123456789abcdef").unwrap();
    let output = run("fs.read", json!({"path": "big.txt"}), &context).await;
    assert_eq!(
        output.output,
        json!({"path": "big.txt", "content": "0123456789", "truncated": true})
    );

    let output = run(
        "fs.write",
        json!({"path": "big2.txt", "content": "0123456789a"}),
        &context,
    )
    .await;
    assert_eq!(
        error_of(&output),
        "content is 11 bytes, more than the limit of 10 bytes"
    );
    assert!(!fixture.workspace.join("big2.txt").exists());
    let output = run(
        "fs.write",
        json!({"path": "exact.txt", "content": "0123456789"}),
        &context,
    )
    .await;
    assert!(output.ok, "{output:?}");

    std::fs::write(fixture.workspace.join("blob.bin"), [0xff, 0xfe, 0x00]).unwrap();
    let output = run("fs.read", json!({"path": "blob.bin"}), &context).await;
    assert_eq!(error_of(&output), "blob.bin is not UTF-8 text");
}
