//! Command classes (DESIGN.md §11.3): what a command line does, in a few words a policy
//! can name (`read_only`, `build`, `delete`, …).
//!
//! The classification is data: `classes.toml` ships inside the binary, `airlock policy
//! classes` prints it, and a policy may add commands to a class (`[commands.read_only] add
//! = ["jq"]`). This module holds the table and its lookups; reading a command line and
//! judging each of its segments is [`crate::matcher::shell::classify`].

mod table;

pub use table::{ClassTable, OperandMode};

use std::fmt;

/// The classification shipped with airlock, as text (`airlock policy classes` prints it).
pub const CLASSES_TOML: &str = include_str!("classes.toml");

/// One class of behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Class {
    ReadOnly,
    Build,
    Write,
    Delete,
    Permissions,
    VcsLocal,
    VcsRemote,
    Install,
    Fetch,
    Network,
    Deploy,
    Discard,
    Privilege,
    CredentialAccess,
    CredentialSearch,
    Persistence,
    RemoteCode,
    UnsafeAgent,
    Unknown,
}

impl Class {
    /// Every class, in the order they are documented.
    pub const ALL: [Class; 19] = [
        Class::ReadOnly,
        Class::Build,
        Class::Write,
        Class::Delete,
        Class::Permissions,
        Class::VcsLocal,
        Class::VcsRemote,
        Class::Install,
        Class::Fetch,
        Class::Network,
        Class::Deploy,
        Class::Discard,
        Class::Privilege,
        Class::CredentialAccess,
        Class::CredentialSearch,
        Class::Persistence,
        Class::RemoteCode,
        Class::UnsafeAgent,
        Class::Unknown,
    ];

    /// The name a policy uses.
    pub fn name(self) -> &'static str {
        match self {
            Class::ReadOnly => "read_only",
            Class::Build => "build",
            Class::Write => "write",
            Class::Delete => "delete",
            Class::Permissions => "permissions",
            Class::VcsLocal => "vcs_local",
            Class::VcsRemote => "vcs_remote",
            Class::Install => "install",
            Class::Fetch => "fetch",
            Class::Network => "network",
            Class::Deploy => "deploy",
            Class::Discard => "discard",
            Class::Privilege => "privilege",
            Class::CredentialAccess => "credential_access",
            Class::CredentialSearch => "credential_search",
            Class::Persistence => "persistence",
            Class::RemoteCode => "remote_code",
            Class::UnsafeAgent => "unsafe_agent",
            Class::Unknown => "unknown",
        }
    }

    /// The class a policy names, if it exists.
    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|class| class.name() == name)
    }

    /// Every class name, for error messages.
    pub fn names() -> String {
        Class::ALL.map(Class::name).join(", ")
    }

    fn bit(self) -> u32 {
        1 << (self as u8)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of classes (a bit set: classes are few and sets are compared on every segment).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ClassSet(u32);

impl ClassSet {
    pub const EMPTY: ClassSet = ClassSet(0);

    pub fn of(classes: &[Class]) -> ClassSet {
        let mut set = ClassSet::EMPTY;
        for &class in classes {
            set.insert(class);
        }
        set
    }

    pub fn insert(&mut self, class: Class) {
        self.0 |= class.bit();
    }

    pub fn extend(&mut self, other: ClassSet) {
        self.0 |= other.0;
    }

    pub fn contains(self, class: Class) -> bool {
        self.0 & class.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Every class of `self` is in `other`.
    pub fn is_subset(self, other: ClassSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// The classes in both.
    pub fn intersection(self, other: ClassSet) -> ClassSet {
        ClassSet(self.0 & other.0)
    }

    pub fn intersects(self, other: ClassSet) -> bool {
        self.0 & other.0 != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Class> {
        Class::ALL
            .into_iter()
            .filter(move |class| self.contains(*class))
    }

    /// The names, comma-separated, for reasons and explanations.
    pub fn describe(self) -> String {
        self.iter().map(Class::name).collect::<Vec<_>>().join(", ")
    }
}
