//! One PostgreSQL database per test, so tests run in parallel and leave nothing behind.

use std::time::Duration;

use sqlx::{Connection, PgConnection};

/// The server the test databases are created on. Trust auth on this machine.
pub fn admin_url() -> String {
    std::env::var("BRAIN_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let host_start = base.find("://").map_or(0, |i| i + 3);
    match base[host_start..].rfind('/') {
        Some(i) => format!("{}/{name}{query}", &base[..host_start + i]),
        None => format!("{base}/{name}{query}"),
    }
}

/// The role brain runs as in tests: no superuser, no BYPASSRLS, owner of its
/// database — as in production, so row-level security is in force.
pub const APP_ROLE: &str = "brain_test_app";
const APP_PASSWORD: &str = "brain_test_app";

/// `url` with its user and password replaced.
fn with_user(url: &str, user: &str, password: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let host = match rest.find('@') {
        Some(at) if rest[..at].find('/').is_none() => &rest[at + 1..],
        _ => rest,
    };
    format!("{}{user}:{password}@{host}", &url[..scheme_end])
}

/// A database created for one test and dropped (with its connections) when the
/// value is dropped.
pub struct TestDb {
    /// What the server connects with: the unprivileged app role.
    pub url: String,
    /// The admin role on the same database, which row-level security does not
    /// bind: for tests that inspect or tamper with rows directly.
    pub inspect_url: String,
    name: String,
}

impl TestDb {
    pub async fn create() -> anyhow::Result<Self> {
        let name = format!("brain_t_{}", uuid::Uuid::new_v4().simple());
        let mut admin = PgConnection::connect(&admin_url()).await?;
        // Parallel tests race to create the role once; a duplicate is fine.
        let create_role = format!(
            "DO $$ BEGIN CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB \
             NOCREATEROLE PASSWORD '{APP_PASSWORD}'; \
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
        );
        sqlx::query(&create_role).execute(&mut admin).await?;
        sqlx::query(&format!("CREATE DATABASE {name} OWNER {APP_ROLE}"))
            .execute(&mut admin)
            .await?;
        admin.close().await?;
        let inspect_url = with_database(&admin_url(), &name);
        Ok(Self {
            url: with_user(&inspect_url, APP_ROLE, APP_PASSWORD),
            inspect_url,
            name,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Drop runs inside a runtime; a separate thread with its own runtime keeps
        // the async cleanup off it.
        let name = self.name.clone();
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime for cleanup");
            rt.block_on(async move {
                if let Ok(mut admin) = PgConnection::connect(&admin_url()).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut admin)
                        .await;
                    let _ = admin.close().await;
                }
            });
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !handle.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{with_database, with_user};

    #[test]
    fn user_is_swapped() {
        assert_eq!(
            with_user("postgres://postgres:pw@h:5432/x", "a", "b"),
            "postgres://a:b@h:5432/x"
        );
        assert_eq!(
            with_user("postgres://h:5432/x", "a", "b"),
            "postgres://a:b@h:5432/x"
        );
    }

    #[test]
    fn database_name_is_swapped() {
        assert_eq!(
            with_database("postgres://u@h:5432/test", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
        assert_eq!(
            with_database("postgres://u@h/test?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
    }
}
