//! PostgreSQL's stored functions live in one file, `functions.sql`; a
//! migration that changes them carries a copy of it. The newest such copy
//! ends with the file, and the file runs again on a migrated database, as its
//! `CREATE OR REPLACE`s promise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

fn migrations() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../migrations/postgres"
    ))
}

#[test]
fn the_newest_functions_migration_is_the_functions_file() {
    let file = std::fs::read_to_string(migrations().join("functions.sql")).unwrap();
    let mut copies: Vec<_> = std::fs::read_dir(migrations())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("_functions.sql"))
        .collect();
    copies.sort();
    let newest = copies.last().expect("a migration carries functions.sql");
    let copy = std::fs::read_to_string(migrations().join(newest)).unwrap();
    // What a copy may say first: the drops of functions whose signature changed.
    assert!(
        copy.ends_with(&file),
        "{newest} does not end with functions.sql: copy the file into a new NNNN_functions.sql"
    );
}

#[tokio::test]
async fn the_functions_file_runs_again_on_a_migrated_database() {
    let (db, _store) = common::store().await;
    let file = std::fs::read_to_string(migrations().join("functions.sql")).unwrap();
    // The role that migrated it, which owns the functions.
    let pool = &sqlx::PgPool::connect(&db.url).await.unwrap();
    let count = "SELECT count(*) FROM pg_proc WHERE proname LIKE 'brain\\_%'";
    let before: i64 = sqlx::query_scalar(count).fetch_one(pool).await.unwrap();
    sqlx::raw_sql(&file).execute(pool).await.unwrap();
    let after: i64 = sqlx::query_scalar(count).fetch_one(pool).await.unwrap();
    assert_eq!(
        before, after,
        "the file creates no function the migrations did not"
    );
    assert!(
        before >= 20,
        "the migrations created brain's functions ({before})"
    );
}
