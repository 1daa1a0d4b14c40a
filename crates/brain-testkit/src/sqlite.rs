//! One SQLite file per test, removed (with its WAL files) afterwards.

use std::path::PathBuf;

pub struct TestSqlite {
    pub path: PathBuf,
    pub url: String,
}

impl TestSqlite {
    pub fn new() -> Self {
        let path =
            std::env::temp_dir().join(format!("brain-test-{}.db", uuid::Uuid::new_v4().simple()));
        let url = format!("sqlite://{}", path.display());
        Self { path, url }
    }
}

impl Default for TestSqlite {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestSqlite {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}
