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

/// A database created for one test and dropped (with its connections) when the
/// value is dropped.
pub struct TestDb {
    pub url: String,
    name: String,
}

impl TestDb {
    pub async fn create() -> anyhow::Result<Self> {
        let name = format!("brain_t_{}", uuid::Uuid::new_v4().simple());
        let mut admin = PgConnection::connect(&admin_url()).await?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        admin.close().await?;
        Ok(Self {
            url: with_database(&admin_url(), &name),
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
    use super::with_database;

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
