//! The two-person rule's keys of a rule (DESIGN.md §11.6): `approvals = N` (distinct
//! people whose approval the call needs, default 1) and `approvers = ["admin",
//! "user:bob"]` (who may decide: a role, meaning that role and every role above it, or
//! one user by name).
//!
//! The policy only checks and carries these; the gate applies them when a person votes.

use airlock_protocol::Role;

/// The most approvals a rule may ask for: a sanity bound, not a product limit.
pub const MAX_APPROVALS: i64 = 20;

/// One entry of `approvers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approver {
    /// Anyone with this role or above (`approver`, `admin`, `owner`).
    Role(Role),
    /// One user, by name (`user:bob`).
    User(String),
}

impl Approver {
    /// Reads one entry, or says precisely why it is not one.
    pub fn parse(text: &str) -> Result<Approver, String> {
        if let Some(name) = text.strip_prefix("user:") {
            if name.trim().is_empty() || name.trim() != name {
                return Err(format!(
                    "`{text}` names no user: write `user:<name>` with the user's name"
                ));
            }
            return Ok(Approver::User(name.to_owned()));
        }
        match text.parse::<Role>() {
            Ok(Role::Viewer) => Err(format!(
                "`{text}`: viewers cannot decide; name `approver`, `admin`, `owner` or `user:<name>`"
            )),
            Ok(role) => Ok(Approver::Role(role)),
            Err(_) => Err(format!(
                "`{text}` is neither a role (approver, admin, owner) nor `user:<name>`"
            )),
        }
    }

    /// Whether a person with `role` and `name` is one this entry admits.
    pub fn admits(&self, role: Role, name: &str) -> bool {
        match self {
            Approver::Role(least) => role >= *least,
            Approver::User(user) => user == name,
        }
    }
}

/// One problem with a rule's two-person keys: the key it belongs to (`"approvals"` or
/// `"approvers"`), so that the caller can point at it, and the message.
pub type Problem = (&'static str, String);

/// Checks a rule's `approvals` and `approvers` together: the number of people and the
/// entries as written, or every problem at once.
pub fn check(
    approvals: Option<i64>,
    approvers: Option<&[String]>,
) -> Result<(u32, Vec<String>), Vec<Problem>> {
    let mut problems = Vec::new();
    let required = match approvals {
        None => 1,
        Some(n) if (1..=MAX_APPROVALS).contains(&n) => u32::try_from(n).unwrap_or(1),
        Some(n) => {
            problems.push((
                "approvals",
                format!("`approvals = {n}`: a call needs 1 to {MAX_APPROVALS} distinct people"),
            ));
            1
        }
    };
    let mut listed = Vec::new();
    if let Some(entries) = approvers {
        if entries.is_empty() {
            problems.push((
                "approvers",
                "`approvers` is empty: nobody could decide; leave it out to let every approver decide"
                    .to_owned(),
            ));
        }
        let mut users = Vec::new();
        let mut any_role = false;
        for entry in entries {
            match Approver::parse(entry) {
                Ok(Approver::User(name)) => {
                    if !users.contains(&name) {
                        users.push(name);
                    }
                }
                Ok(Approver::Role(_)) => any_role = true,
                Err(message) => problems.push(("approvers", message)),
            }
            listed.push(entry.clone());
        }
        // Only named users and too few of them: the call could never be approved.
        if !any_role && !users.is_empty() && users.len() < required as usize {
            problems.push((
                "approvals",
                format!(
                    "`approvals = {required}` but `approvers` names only {} user{}: the call could never be approved",
                    users.len(),
                    if users.len() == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    if problems.is_empty() {
        Ok((required, listed))
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn list(entries: &[&str]) -> Vec<String> {
        entries.iter().map(|e| (*e).to_owned()).collect()
    }

    #[test]
    fn entries_are_roles_or_named_users() {
        assert_eq!(Approver::parse("admin"), Ok(Approver::Role(Role::Admin)));
        assert_eq!(
            Approver::parse("user:bob"),
            Ok(Approver::User("bob".into()))
        );
        for bad in ["user:", "user: bob", "boss", "Admin", "viewer", ""] {
            assert!(Approver::parse(bad).is_err(), "{bad}");
        }
        assert!(Approver::parse("viewer")
            .unwrap_err()
            .contains("viewers cannot decide"));
    }

    #[test]
    fn a_role_admits_that_role_and_every_one_above_it() {
        let admin = Approver::Role(Role::Admin);
        assert!(admin.admits(Role::Owner, "x"));
        assert!(admin.admits(Role::Admin, "x"));
        assert!(!admin.admits(Role::Approver, "x"));
        let bob = Approver::User("bob".into());
        assert!(bob.admits(Role::Approver, "bob"));
        assert!(!bob.admits(Role::Owner, "bobby"));
    }

    #[test]
    fn approvals_and_approvers_are_checked_together() {
        assert_eq!(check(None, None), Ok((1, Vec::new())));
        assert_eq!(
            check(Some(2), Some(&list(&["admin", "user:bob"]))),
            Ok((2, list(&["admin", "user:bob"])))
        );
        for n in [0, -1, MAX_APPROVALS + 1] {
            let problems = check(Some(n), None).unwrap_err();
            assert_eq!(problems[0].0, "approvals", "{n}");
        }
        let problems = check(Some(3), Some(&list(&["user:a", "user:b", "user:a"]))).unwrap_err();
        assert!(problems[0].1.contains("names only 2 users"), "{problems:?}");
        let problems = check(None, Some(&[])).unwrap_err();
        assert!(problems[0].1.contains("nobody could decide"));
        let problems = check(Some(0), Some(&list(&["boss"]))).unwrap_err();
        assert_eq!(problems.len(), 2, "every problem at once: {problems:?}");
    }
}
