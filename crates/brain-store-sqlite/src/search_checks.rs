//! brain's letters (brain_core::search_words) checked against the SQLite
//! brain links: every character brain reads as a letter or digit is one to
//! SQLite's unicode61 tokenizer too, so the copy of its table is true.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::search_words::{is_word_char, words};
use sqlx::Row as _;
use sqlx::sqlite::SqlitePool;

/// brain's copy of unicode61's table (brain_core::search_words) must read
/// letters as the linked SQLite does: the word rule rests on it (a circled
/// letter, alphabetic to Rust, is a symbol to SQLite and ends a word).
#[tokio::test]
async fn brains_letters_are_sqlites_letters() {
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
            "SQLite splits at a character brain reads as a letter, among {:?}…",
            &chunk[..4]
        );
    }
    // And what SQLite splits, brain counts apart.
    assert_eq!(words("zⒶzⒶz").count(), 3);
}
