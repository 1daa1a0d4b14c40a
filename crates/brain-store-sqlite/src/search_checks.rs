//! What a search costs SQLite's full-text index, checked against the SQLite
//! brain links: every word brain counts is one token to its tokenizer, and
//! the index reads only the window's range of rowids.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::search_words::{is_word_char, words};
use brain_core::store::StoreSettings;
use brain_testkit::TestSqlite;
use sqlx::Row as _;
use sqlx::sqlite::SqlitePool;

/// brain's copy of unicode61's table (brain_core::search_words) must split
/// as the linked SQLite does: were a character brain counts inside a word a
/// separator to SQLite, one counted word could be a phrase of hundreds of
/// tokens (a circled letter between letters made 500: 6.3 s a search).
#[tokio::test]
async fn every_counted_word_is_one_sqlite_token() {
    let pool = SqlitePool::connect("sqlite::memory:").await.unwrap();
    sqlx::query("CREATE VIRTUAL TABLE t USING fts5(x)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        .execute(&pool)
        .await
        .unwrap();
    // Every non-ASCII character brain counts in a word, between two letters
    // (one token if SQLite agrees, two or three if not), 4,096 a row.
    let inside: Vec<char> = ('\u{80}'..=char::MAX)
        .filter(|&c| is_word_char(c))
        .collect();
    assert!(inside.len() > 100_000, "{}", inside.len());
    let rows: Vec<&[char]> = inside.chunks(4096).collect();
    for (i, chunk) in rows.iter().enumerate() {
        let doc: Vec<String> = chunk.iter().map(|c| format!("q{c}q")).collect();
        assert_eq!(words(&doc.join(" ")).count(), chunk.len());
        sqlx::query("INSERT INTO t (rowid, x) VALUES (?1, ?2)")
            .bind(i as i64)
            .bind(doc.join(" "))
            .execute(&pool)
            .await
            .unwrap();
    }
    let counted = sqlx::query("SELECT doc, count(*) AS n FROM v GROUP BY doc ORDER BY doc")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(counted.len(), rows.len());
    for r in counted {
        let doc: i64 = r.get("doc");
        let n: i64 = r.get("n");
        let chunk = rows[doc as usize];
        assert_eq!(
            n as usize,
            chunk.len(),
            "SQLite split a word brain counts as one, among {:?}…",
            &chunk[..4]
        );
    }
    // And what SQLite splits, brain counts apart.
    assert_eq!(words("zⒶzⒶz").count(), 3);
}

/// The full-text index reads a search's window by its range of rowids
/// (`INDEX 0:M…><` in SQLite's plan): without the range it read every
/// match in the project before the window applied.
#[tokio::test]
async fn a_search_reads_the_full_text_index_by_the_windows_rowids() {
    let file = TestSqlite::new();
    let store = crate::SqliteStore::connect(&file.url, StoreSettings::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let pool = SqlitePool::connect(&file.url).await.unwrap();
    let plan = sqlx::query(&format!(
        "EXPLAIN QUERY PLAN {}",
        crate::sql::SQL.recall_search
    ))
    .fetch_all(&pool)
    .await
    .unwrap();
    let details: Vec<String> = plan.iter().map(|r| r.get("detail")).collect();
    let fts = details
        .iter()
        .find(|d| d.contains("artifacts_fts VIRTUAL TABLE"))
        .unwrap_or_else(|| panic!("{details:#?}"));
    let index = fts.rsplit(':').next().unwrap();
    assert!(
        index.starts_with('M') && index.contains('>') && index.contains('<'),
        "{details:#?}"
    );
}
