//! PostgreSQL for the PostgreSQL figures: a server named by `--pg-url` or
//! `AIRLOCK_TEST_PG_URL` (what `scripts/test.sh` exports), never one started behind the
//! user's back. Each figure gets a fresh database on it, dropped when the figure is done.

use crate::Options;
use anyhow::{bail, Context};
use sqlx::{Connection, Executor, PgConnection};
use std::sync::atomic::{AtomicU64, Ordering};

/// The admin URL the PostgreSQL figures use, or why there is none.
pub fn admin_url(options: &Options) -> anyhow::Result<String> {
    match options.pg_url.as_deref() {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(url.to_owned())
        }
        Some(url) if !url.is_empty() => {
            bail!("--pg-url (or AIRLOCK_TEST_PG_URL) `{url}` is not a postgres:// URL")
        }
        _ => bail!(
            "the PostgreSQL figures need a server: pass --pg-url postgres://USER@HOST:PORT/DB \
             (a role that may CREATE DATABASE) or set AIRLOCK_TEST_PG_URL"
        ),
    }
}

/// A database made for one figure.
pub struct Database {
    admin_url: String,
    name: String,
    /// Its URL.
    pub url: String,
}

impl Database {
    /// Creates an empty database on the server of `admin_url`.
    pub async fn create(admin_url: &str) -> anyhow::Result<Database> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "airlock_bench_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = PgConnection::connect(admin_url)
            .await
            .with_context(|| format!("connecting to PostgreSQL at {}", redacted(admin_url)))?;
        admin
            .execute(format!("CREATE DATABASE \"{name}\"").as_str())
            .await
            .with_context(|| format!("creating database {name}"))?;
        admin.close().await?;
        Ok(Database {
            url: with_database(admin_url, &name),
            admin_url: admin_url.to_owned(),
            name,
        })
    }

    /// Drops the database (every connection to it must be closed).
    pub async fn drop(self) -> anyhow::Result<()> {
        let mut admin = PgConnection::connect(&self.admin_url).await?;
        admin
            .execute(format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name).as_str())
            .await
            .with_context(|| format!("dropping database {}", self.name))?;
        admin.close().await?;
        Ok(())
    }
}

/// `url` without its password, for messages.
fn redacted(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((_, host)) => format!("postgres://…@{host}"),
        None => url.to_owned(),
    }
}

/// `url` naming `database` instead of its own, query string kept.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority = base.find("://").map_or(0, |index| index + 3);
    let server = match base[authority..].find('/') {
        Some(slash) => &base[..authority + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn database_urls() {
        assert_eq!(
            with_database("postgres://a@h:1/postgres", "x"),
            "postgres://a@h:1/x"
        );
        assert_eq!(with_database("postgres://a@h:1", "x"), "postgres://a@h:1/x");
        assert_eq!(
            with_database("postgres://a:p@h/db?sslmode=disable", "x"),
            "postgres://a:p@h/x?sslmode=disable"
        );
        assert_eq!(
            redacted("postgres://a:secret@h:1/db"),
            "postgres://…@h:1/db"
        );
    }

    #[test]
    fn a_missing_or_foreign_url_is_refused_with_the_way_out() {
        let options = |url: Option<&str>| Options {
            quick: true,
            pg_url: url.map(str::to_owned),
            airlock_bin: None,
        };
        let error = admin_url(&options(None)).unwrap_err().to_string();
        assert!(error.contains("--pg-url") && error.contains("AIRLOCK_TEST_PG_URL"));
        assert!(admin_url(&options(Some("mysql://h/db"))).is_err());
        assert_eq!(
            admin_url(&options(Some("postgres://h/db"))).unwrap(),
            "postgres://h/db"
        );
    }
}
