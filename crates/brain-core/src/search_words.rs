//! The words of a search (SPEC §2.8): what the 8-word cap of a
//! `brain_recall` query counts, and what brain matches itself
//! ([`Query`], SQLite's and the memory store's searches).
//!
//! A word is a run of characters that are alphanumeric to Rust *and* token
//! characters to SQLite's unicode61 tokenizer, read from SQLite's own table
//! ([`fts5_categories`], copied by `scripts/fts5-categories`): the stricter
//! of the two readings, so a counted word is one token to either, and a
//! query of 8 words is a phrase of at most 8 tokens to a full-text engine.
//! Splitting by Rust's alphanumerics alone let one counted word become a
//! 500-token phrase in SQLite (a circled letter is alphabetic to Rust, a
//! symbol to SQLite): 6.3 s of CPU for one search.

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

/// A search query as brain matches it itself (SQLite's and the memory
/// store's searches), in web-search syntax as PostgreSQL's
/// `websearch_to_tsquery` reads it: words all present, `or` between
/// alternatives, `-word` absent from its alternative, `"quotes"` a phrase;
/// whole [`words`], compared case-insensitively.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// The distinct words of the query, lowercased; phrases name them by
    /// place.
    words: Vec<String>,
    /// Alternatives: a text matches when any one holds.
    clauses: Vec<Clause>,
}

#[derive(Debug, Clone, Default)]
struct Clause {
    with: Vec<Vec<usize>>,
    without: Vec<Vec<usize>>,
}

/// What [`Query::matches`] found in a text: the hits of the alternatives
/// that hold (words they ask for, each time one appears), and the text's
/// words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub hits: usize,
    pub words: usize,
}

impl Query {
    /// `None` when the query holds no word.
    pub fn parse(input: &str) -> Option<Query> {
        let mut q = Query {
            words: Vec::new(),
            clauses: vec![Clause::default()],
        };
        let mut rest = input;
        while !rest.trim_start().is_empty() {
            rest = rest.trim_start();
            let (negate, body) = match rest.strip_prefix('-') {
                Some(b) => (true, b),
                None => (false, rest),
            };
            let (quoted, term, next) = if let Some(inner) = body.strip_prefix('"') {
                match inner.find('"') {
                    Some(i) => (true, &inner[..i], &inner[i + 1..]),
                    None => (true, inner, ""),
                }
            } else {
                let end = body.find(char::is_whitespace).unwrap_or(body.len());
                (false, &body[..end], &body[end..])
            };
            rest = next;
            let phrase: Vec<&str> = words(term).collect();
            if phrase.is_empty() {
                continue;
            }
            let current = q.clauses.len() - 1;
            let started = !q.clauses[current].with.is_empty();
            if !negate
                && !quoted
                && started
                && phrase.len() == 1
                && phrase[0].eq_ignore_ascii_case("or")
            {
                q.clauses.push(Clause::default());
                continue;
            }
            let phrase: Vec<usize> = phrase.into_iter().map(|w| q.word_place(w)).collect();
            let clause = &mut q.clauses[current];
            match negate {
                true => clause.without.push(phrase),
                false => clause.with.push(phrase),
            }
        }
        q.clauses
            .retain(|c| !c.with.is_empty() || !c.without.is_empty());
        (!q.clauses.is_empty()).then_some(q)
    }

    fn word_place(&mut self, word: &str) -> usize {
        let word = word.to_lowercase();
        match self.words.iter().position(|w| *w == word) {
            Some(i) => i,
            None => {
                self.words.push(word);
                self.words.len() - 1
            }
        }
    }

    /// Which of the query's words `word` is, case apart.
    fn place_of(&self, word: &str) -> Option<usize> {
        if word.chars().any(char::is_uppercase) {
            let lower = word.to_lowercase();
            self.words.iter().position(|w| *w == lower)
        } else {
            self.words.iter().position(|w| w == word)
        }
    }

    /// Whether `text` matches, and its hits: one pass over its words, then
    /// one over their places per phrase (8 at most), so the cost is the
    /// text's length times the query's words however the hits fall.
    pub fn matches(&self, text: &str) -> Option<Found> {
        let places: Vec<Option<usize>> = words(text).map(|w| self.place_of(w)).collect();
        let holds = |phrase: &Vec<usize>| match phrase.as_slice() {
            [one] => places.contains(&Some(*one)),
            _ => places
                .windows(phrase.len())
                .any(|w| w.iter().zip(phrase).all(|(p, want)| *p == Some(*want))),
        };
        let held: Vec<&Clause> = self
            .clauses
            .iter()
            .filter(|c| c.with.iter().all(holds) && !c.without.iter().any(holds))
            .collect();
        if held.is_empty() {
            return None;
        }
        let mut wanted = vec![false; self.words.len()];
        for place in held.iter().flat_map(|c| c.with.iter().flatten()) {
            wanted[*place] = true;
        }
        let hits = places
            .iter()
            .filter(|p| p.is_some_and(|i| wanted[i]))
            .count();
        Some(Found {
            hits,
            words: places.len(),
        })
    }
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

    fn found(query: &str, text: &str) -> Option<usize> {
        Query::parse(query).unwrap().matches(text).map(|f| f.hits)
    }

    #[test]
    fn a_query_reads_as_a_web_search() {
        assert_eq!(found("alpha beta", "Beta and ALPHA, alpha"), Some(3));
        assert_eq!(found("alpha beta", "alpha only"), None);
        assert_eq!(found("alpha or beta", "just beta"), Some(1));
        assert_eq!(found("alpha OR beta", "just beta"), Some(1));
        assert_eq!(found("alpha -beta", "alpha beta"), None);
        assert_eq!(found("alpha -beta", "alpha gamma"), Some(1));
        // An exclusion belongs to its alternative, as in PostgreSQL.
        assert_eq!(found("alpha or gamma -beta", "alpha beta"), Some(1));
        assert_eq!(found("alpha or gamma -beta", "gamma beta"), None);
        // Only exclusions: the texts without them.
        assert_eq!(found("-beta", "alpha"), Some(0));
        assert_eq!(found("-beta", "beta"), None);
        // A phrase is its words in a row.
        assert_eq!(found("\"big cat\"", "a big cat"), Some(2));
        assert_eq!(found("\"big cat\"", "a cat, big"), None);
        assert_eq!(found("\"or\"", "this or that"), Some(1));
        // Whole words only.
        assert_eq!(found("cat", "concatenate"), None);
        assert!(Query::parse(" -- !! ").is_none());
        assert!(Query::parse("or").is_some());
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
