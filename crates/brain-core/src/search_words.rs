//! The words of a `brain_recall` query (SPEC §2.8): what the 8-word cap
//! counts and what SQLite's full-text query is built from.
//!
//! A word is a run of characters that are alphanumeric to Rust *and* token
//! characters to SQLite's unicode61 tokenizer, read from SQLite's own table
//! ([`fts5_categories`], copied by `scripts/fts5-categories`). So every word
//! brain counts is exactly one token to SQLite: a query of 8 words is a
//! phrase of at most 8 tokens, whose match costs a text's positions times 8.
//! Splitting by Rust's alphanumerics alone let one counted word become a
//! 500-token phrase (a circled letter is alphabetic to Rust, a symbol to
//! SQLite): 6.3 s of CPU for one search.

mod fts5_categories;

use fts5_categories::{BLOCK, DATA, MAP};

/// Words a search may hold: each is a term or a phrase's token the
/// full-text engines match against the texts of a window.
pub const QUERY_WORDS_MAX: usize = 8;

/// The words of `query`, in order: every one, `or`, excluded and quoted
/// words included (the syntax around them is not a word).
pub fn words(query: &str) -> impl Iterator<Item = &str> {
    query.split(|c| !is_word_char(c)).filter(|w| !w.is_empty())
}

/// Whether `c` belongs to a word: alphanumeric, and a token character to
/// SQLite's unicode61 with its default categories (`L* N* Co`, and code
/// points its table does not know).
pub fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    c.is_alphanumeric() && is_fts5_token_category(fts5_category(u32::from(c)))
}

/// unicode61's default token categories: L* (5–9 and 30, its LC), N*
/// (13–15), Co (31), and 0, where its table holds nothing.
fn is_fts5_token_category(category: u8) -> bool {
    matches!(category, 0 | 5..=9 | 13..=15 | 30 | 31)
}

/// SQLite's `sqlite3Fts5UnicodeCategory`: the category of a code point by
/// a search of its block's ranges.
fn fts5_category(code: u32) -> u8 {
    if code >= 1 << 20 {
        return 0;
    }
    let block = (code >> 16) as usize;
    let (lo, hi) = (usize::from(BLOCK[block]), usize::from(BLOCK[block + 1]));
    let key = code & 0xFFFF;
    // The last range of the block that starts at or before `key`.
    let ranges = &MAP[lo..hi];
    let at = ranges.partition_point(|&start| u32::from(start) <= key);
    let Some(i) = at.checked_sub(1).map(|i| lo + i) else {
        return 0;
    };
    let (start, data) = (u32::from(MAP[i]), DATA[i]);
    if key >= start + u32::from(data >> 5) {
        return 0;
    }
    match (data & 0x1F) as u8 {
        // Upper and lower case letters alternating through the range.
        30 if (key - start) & 1 == 1 => 5,
        30 => 9,
        category => category,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_where_sqlite_ends_a_token() {
        assert_eq!(words("alpha -beta \"gamma delta\" or x_1").count(), 7);
        // A circled letter is alphabetic to Rust, a symbol (So) to SQLite.
        assert_eq!(words("zⒶzⒶz").collect::<Vec<_>>(), ["z", "z", "z"]);
        // A combining mark ends a token (SQLite folds only the diacritics
        // that follow a letter), and so ends a word.
        assert_eq!(words("क\u{093E}ख").count(), 2);
        assert_eq!(words("naïve café Привет 東京 ٣").count(), 5);
        // Emoji are no words (SQLite's table does not know them, Rust's
        // alphanumerics do not hold them).
        assert_eq!(words("a🥰a").collect::<Vec<_>>(), ["a", "a"]);
        assert_eq!(words(" -- !! ").count(), 0);
    }

    #[test]
    fn categories_read_as_sqlite_reads_them() {
        assert_eq!(fts5_category(u32::from('Ⓐ')), 26); // So
        assert_eq!(fts5_category(u32::from('é')), 5); // Ll
        assert_eq!(fts5_category(u32::from('Ж')), 9); // Lu
        assert_eq!(fts5_category(u32::from('ا')), 7); // Lo
        // Not in the table (as CJK ideographs are): a token character.
        assert_eq!(fts5_category(u32::from('東')), 0);
        assert_eq!(fts5_category(u32::from('\u{0301}')), 12); // Mn
        assert_eq!(fts5_category(0x10_FFFF), 0);
    }
}
