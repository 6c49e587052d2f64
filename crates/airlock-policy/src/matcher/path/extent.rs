//! What a file a command names stands for when a path pattern is matched against it:
//! itself, what lies below it, and whether it can only be a file.

/// What a file a command names stands for, when a pattern is matched against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// The path itself, a file or a folder.
    Entry,
    /// The path and everything below it (a glob, a folder searched).
    Tree,
    /// The path itself, which can only be a file (`rm` without `-r` deletes no folder).
    File,
    /// Files below the path, never a folder (a glob that `rm` without `-r` expands).
    Files,
}

impl Extent {
    /// The extent of a path that stands for itself or, when `tree`, what is below it;
    /// `file_only` when only files are touched.
    pub fn new(tree: bool, file_only: bool) -> Extent {
        match (tree, file_only) {
            (false, false) => Extent::Entry,
            (true, false) => Extent::Tree,
            (false, true) => Extent::File,
            (true, true) => Extent::Files,
        }
    }

    /// Whether it stands for what lies below the path.
    pub fn tree(self) -> bool {
        matches!(self, Extent::Tree | Extent::Files)
    }
}
