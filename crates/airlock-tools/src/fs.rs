//! `fs.read` and `fs.write`, confined to the workspace directory.
//!
//! A path names a file inside the workspace however it is written: relative paths are
//! taken from the workspace, absolute ones are accepted only when they point into it, and
//! `..` never climbs above it. Symlinks are followed only while they stay inside: the
//! existing part of a path is canonicalized (which resolves every symlink on it) and must
//! lie under the canonical workspace, and the final open refuses a symlink outright
//! (`O_NOFOLLOW`), so the file opened is the file that was checked.
//!
//! Limits of this confinement: another process of the same user that swaps a directory
//! for a symlink between the check and the open can still win that race; hard links to
//! files outside the workspace are followed like any file. The agent's own `shell.exec`
//! is such a process, which is why `shell.exec` is an `exec` tool.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use crate::execute::{utf8_text, ToolContext};

/// `open(2)` flags for every file this module opens: never through a symlink (the path
/// was already resolved), and never block on a FIFO someone left in the workspace.
const OPEN_FLAGS: i32 = nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK;

/// `fs.read`: `{path, content, truncated}`.
pub(crate) async fn read(path: String, context: &ToolContext) -> Result<Value, String> {
    let workspace = context.workspace_dir.clone();
    let max_bytes = context.limits.fs_max_bytes;
    tokio::task::spawn_blocking(move || read_blocking(&workspace, &path, max_bytes))
        .await
        .map_err(|error| format!("fs.read did not finish: {error}"))?
}

/// `fs.write`: `{path, bytes}`.
pub(crate) async fn write(
    path: String,
    content: String,
    context: &ToolContext,
) -> Result<Value, String> {
    let workspace = context.workspace_dir.clone();
    let max_bytes = context.limits.fs_max_bytes;
    tokio::task::spawn_blocking(move || write_blocking(&workspace, &path, &content, max_bytes))
        .await
        .map_err(|error| format!("fs.write did not finish: {error}"))?
}

fn read_blocking(workspace: &Path, path: &str, max_bytes: usize) -> Result<Value, String> {
    let root = canonical_root(workspace)?;
    let relative = relative_path(workspace, &root, path)?;
    let shown = relative.display();
    let resolved = std::fs::canonicalize(root.join(&relative))
        .map_err(|error| format!("cannot read {shown}: {}", io_reason(&error)))?;
    if !resolved.starts_with(&root) {
        return Err(format!(
            "{shown} leads outside the workspace (through a symlink)"
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(OPEN_FLAGS)
        .open(&resolved)
        .map_err(|error| format!("cannot read {shown}: {}", io_reason(&error)))?;
    check_regular(&file, &shown.to_string())?;
    // One byte more than the limit says whether there was more.
    let mut bytes = Vec::new();
    file.take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("cannot read {shown}: {}", io_reason(&error)))?;
    let truncated = bytes.len() > max_bytes;
    bytes.truncate(max_bytes);
    let content =
        utf8_text(bytes, truncated).ok_or_else(|| format!("{shown} is not UTF-8 text"))?;
    Ok(json!({"path": shown.to_string(), "content": content, "truncated": truncated}))
}

fn write_blocking(
    workspace: &Path,
    path: &str,
    content: &str,
    max_bytes: usize,
) -> Result<Value, String> {
    let root = canonical_root(workspace)?;
    let relative = relative_path(workspace, &root, path)?;
    let shown = relative.display();
    if content.len() > max_bytes {
        return Err(format!(
            "content is {} bytes, more than the limit of {max_bytes} bytes",
            content.len()
        ));
    }
    let Some(name) = relative.file_name() else {
        return Err("path names the workspace directory itself, not a file".to_string());
    };
    let parent = relative.parent().unwrap_or(Path::new(""));

    // The deepest ancestor of the parent that exists must resolve inside the workspace;
    // only the missing directories below it are created, and they cannot be symlinks.
    let mut existing = parent.to_path_buf();
    while !root.join(&existing).exists() && existing.pop() {}
    let anchor = inside(&root, &root.join(&existing), &shown)?;
    let missing = parent.strip_prefix(&existing).unwrap_or(Path::new(""));
    if !missing.as_os_str().is_empty() {
        std::fs::create_dir_all(anchor.join(missing)).map_err(|error| {
            format!(
                "cannot create the directories of {shown}: {}",
                io_reason(&error)
            )
        })?;
    }
    // Checked again: something may have raced a symlink in while the directories were made.
    let directory = inside(&root, &anchor.join(missing), &shown)?;

    let mut target = directory.join(name);
    match std::fs::symlink_metadata(&target) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            // A symlink to a file inside the workspace is written through; one that leaves
            // it, or whose target does not exist (and would be created outside), is not.
            target = std::fs::canonicalize(&target).map_err(|_| {
                format!("{shown} is a symlink to a missing file; refusing to write through it")
            })?;
            if !target.starts_with(&root) {
                return Err(format!(
                    "{shown} leads outside the workspace (through a symlink)"
                ));
            }
        }
        Ok(metadata) if metadata.is_dir() => return Err(format!("{shown} is a directory")),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(OPEN_FLAGS)
        .open(&target)
        .map_err(|error| format!("cannot write {shown}: {}", io_reason(&error)))?;
    check_regular(&file, &shown.to_string())?;
    file.write_all(content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|error| format!("cannot write {shown}: {}", io_reason(&error)))?;
    Ok(json!({"path": shown.to_string(), "bytes": content.len()}))
}

/// The canonical workspace directory.
fn canonical_root(workspace: &Path) -> Result<PathBuf, String> {
    let root = std::fs::canonicalize(workspace).map_err(|error| {
        format!(
            "the workspace directory {} is not usable: {}",
            workspace.display(),
            io_reason(&error)
        )
    })?;
    if !root.is_dir() {
        return Err(format!(
            "the workspace directory {} is not a directory",
            workspace.display()
        ));
    }
    Ok(root)
}

/// `path` as a lexically normalised path relative to the workspace: no root, no `.`, no
/// `..`. An absolute path must point into the workspace (as configured or as canonical);
/// a `..` that would climb above the workspace is refused rather than clamped, because a
/// model that writes one means a file outside.
fn relative_path(workspace: &Path, root: &Path, path: &str) -> Result<PathBuf, String> {
    let requested = Path::new(path);
    let relative = if requested.is_absolute() {
        let absolute = normalize(requested).unwrap_or_default();
        let configured = normalize(workspace).unwrap_or_default();
        match absolute
            .strip_prefix(root)
            .or_else(|_| absolute.strip_prefix(&configured))
        {
            Ok(relative) => relative.to_path_buf(),
            Err(_) => return Err(format!("{path} is outside the workspace")),
        }
    } else {
        requested.to_path_buf()
    };
    normalize(&relative).ok_or_else(|| format!("{path} leads outside the workspace"))
}

/// Lexical normalisation: drops `.`, resolves `..` against the components before it.
/// `None` when a relative path climbs above its start. An absolute path keeps its root
/// (`/..` is `/`, as the kernel reads it).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => normal.push(component),
            Component::CurDir => {}
            Component::Normal(part) => normal.push(part),
            Component::ParentDir => {
                if path.is_absolute() {
                    normal.pop();
                } else if !normal.pop() {
                    return None;
                }
            }
        }
    }
    Some(normal)
}

/// `path` canonicalized, provided it lies under the canonical `root`.
fn inside(root: &Path, path: &Path, shown: &impl std::fmt::Display) -> Result<PathBuf, String> {
    let resolved = std::fs::canonicalize(path)
        .map_err(|error| format!("cannot resolve {shown}: {}", io_reason(&error)))?;
    if resolved.starts_with(root) {
        Ok(resolved)
    } else {
        Err(format!(
            "{shown} leads outside the workspace (through a symlink)"
        ))
    }
}

/// Refuses anything but a regular file (a device, a FIFO, a socket).
fn check_regular(file: &File, shown: &str) -> Result<(), String> {
    let metadata = file
        .metadata()
        .map_err(|error| format!("cannot inspect {shown}: {}", io_reason(&error)))?;
    if metadata.is_dir() {
        return Err(format!("{shown} is a directory"));
    }
    if !metadata.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    Ok(())
}

/// An I/O error in words the model can act on. `O_NOFOLLOW` on a symlink reports
/// "too many levels of symbolic links", which would mislead.
fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ if error.raw_os_error() == Some(nix::libc::ELOOP) => "it is a symlink".to_string(),
        _ => error.to_string().to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_lexically_and_refuses_climbing_out() {
        let cases: &[(&str, Option<&str>)] = &[
            ("a/b", Some("a/b")),
            ("./a/./b/", Some("a/b")),
            ("a/../b", Some("b")),
            ("a/..", Some("")),
            ("..", None),
            ("a/../../b", None),
            ("/../etc", Some("/etc")),
            ("/a/b/../c", Some("/a/c")),
        ];
        for (path, expected) in cases {
            let normal = normalize(Path::new(path));
            assert_eq!(normal.as_deref(), expected.map(Path::new), "{path}");
        }
    }
}
