//! The words of a search (SPEC §2.8): what the 8-word cap of a
//! `brain_recall` query counts, and what brain matches itself
//! ([`Query`], SQLite's and the memory store's searches).
//!
//! A word starts at a character that is alphanumeric to Rust *and* a letter
//! or digit in SQLite's unicode61 table ([`fts5_categories`], copied by
//! `scripts/fts5-categories`), and goes on through such characters and the
//! combining marks that follow them (an Indic vowel sign stays in its
//! word). The stricter reading of "letter" keeps a counted word from
//! hiding many words of a full-text engine: a circled letter is alphabetic
//! to Rust, a symbol to SQLite, and one counted word of 500 SQLite tokens
//! cost 6.3 s of CPU for one search before SQLite's full-text index was
//! dropped (0028).

mod fts5_categories;

use fts5_categories::{BLOCK, DATA, MAP};

/// Words a search may hold: each is a term or a phrase's word the full-text
/// engine (or brain) matches against the texts of a window.
pub const QUERY_WORDS_MAX: usize = 8;

/// The words of `text`, in order: in a query every one, `or`, excluded and
/// quoted words included (the syntax around them is not a word).
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let (start, _) = rest.char_indices().find(|&(_, c)| is_word_char(c))?;
        let tail = &rest[start..];
        let end = tail
            .char_indices()
            .find(|&(_, c)| !is_word_char(c) && !is_mark(c))
            .map_or(tail.len(), |(i, _)| i);
        rest = &tail[end..];
        Some(&tail[..end])
    })
}

/// `word` as brain compares it: lowercased, without the marks lowercasing
/// adds (`İ` is `i`, as PostgreSQL's lower() reads it), into `out`.
fn fold_into(word: &str, out: &mut String) {
    out.clear();
    for c in word.chars() {
        if is_mark(c) {
            out.push(c);
        } else {
            out.extend(c.to_lowercase().filter(|l| !is_mark(*l)));
        }
    }
}

/// A search query as brain matches it itself (SQLite's and the memory
/// store's searches), in web-search syntax as PostgreSQL's
/// `websearch_to_tsquery` reads it: words all present, `or` between
/// alternatives, `-word` absent from its alternative (`--word` present
/// again, a lone `-` negating the next), `"quotes"` a phrase; whole
/// [`words`], case apart.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// The distinct words of the query, folded; phrases name them by place.
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

/// A token of web-search syntax, as PostgreSQL's `websearch_to_tsquery`
/// reads it (`gettoken_query_websearch`): an operand's text (its words are
/// a phrase; none, it drops out), or an operator.
enum Token<'a> {
    Operand(&'a str),
    Not,
    And,
    Or,
}

/// Characters that separate operands and mean nothing else.
fn is_operator_char(c: char) -> bool {
    matches!(c, '!' | '&' | '|' | '(' | ')' | '<')
}

/// A space as PostgreSQL's `t_isspace` reads one in a UTF-8 locale
/// (`iswspace`: Unicode's spaces, not the no-break ones).
fn is_space(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}')
}

/// The tokens of `input`, as PostgreSQL splits web-search syntax: `-`
/// before an operand negates it, `"…"` is one operand (to the end when the
/// quote is not closed), `or` between operands is the operator (not at the
/// end, not followed by a letter, digit, `-` or `_`), anything else between
/// operands is an AND; an operand runs to a space, a quote, a `:` or an
/// operator character.
fn tokens(input: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = input;
    let mut want_operand = true;
    loop {
        let Some(c) = rest.chars().next() else {
            return out;
        };
        if want_operand {
            if c == '-' {
                out.push(Token::Not);
                rest = &rest[1..];
            } else if let Some(inner) = rest.strip_prefix('"') {
                let (value, next) = match inner.find('"') {
                    Some(i) => (&inner[..i], &inner[i + 1..]),
                    None => (inner, ""),
                };
                out.push(Token::Operand(value));
                rest = next;
                want_operand = false;
            } else if is_operator_char(c) || is_space(c) {
                rest = &rest[c.len_utf8()..];
            } else {
                let first = c.len_utf8();
                let end = rest[first..]
                    .find(|c: char| is_space(c) || is_operator_char(c) || c == '"' || c == ':')
                    .map_or(rest.len(), |i| first + i);
                out.push(Token::Operand(&rest[..end]));
                rest = &rest[end..];
                want_operand = false;
            }
        } else if starts_or(rest) {
            out.push(Token::Or);
            rest = &rest[2..];
            want_operand = true;
        } else if is_operator_char(c) || is_space(c) {
            rest = &rest[c.len_utf8()..];
        } else {
            out.push(Token::And);
            want_operand = true;
        }
    }
}

/// Whether `rest` starts with the operator `or`: followed by a character
/// that is not a letter, digit, `-` or `_`, and by more than spaces.
fn starts_or(rest: &str) -> bool {
    let Some(head) = rest.get(..2) else {
        return false;
    };
    if !head.eq_ignore_ascii_case("or") {
        return false;
    }
    let mut after = rest[2..].chars();
    match after.next() {
        None => false,
        Some(c) if c.is_alphanumeric() || c == '-' || c == '_' => false,
        Some(_) => after.any(|c| !is_space(c)),
    }
}

impl Query {
    /// `None` when the query holds no word.
    pub fn parse(input: &str) -> Option<Query> {
        let mut q = Query {
            words: Vec::new(),
            clauses: vec![Clause::default()],
        };
        // NOT binds to the operand after it, AND before OR: the query is
        // alternatives of operands, each present or (negated) absent. An
        // operand of no words drops out, with its negation.
        let mut negated = false;
        for token in tokens(input) {
            match token {
                Token::Not => negated = !negated,
                Token::And => {}
                Token::Or => q.clauses.push(Clause::default()),
                Token::Operand(text) => {
                    let phrase: Vec<usize> = words(text).map(|w| q.word_place(w)).collect();
                    if !phrase.is_empty() {
                        let clause = q.clauses.last_mut()?;
                        match negated {
                            true => clause.without.push(phrase),
                            false => clause.with.push(phrase),
                        }
                    }
                    negated = false;
                }
            }
        }
        q.clauses
            .retain(|c| !c.with.is_empty() || !c.without.is_empty());
        (!q.clauses.is_empty()).then_some(q)
    }

    fn word_place(&mut self, word: &str) -> usize {
        let mut folded = String::new();
        fold_into(word, &mut folded);
        match self.words.iter().position(|w| *w == folded) {
            Some(i) => i,
            None => {
                self.words.push(folded);
                self.words.len() - 1
            }
        }
    }

    /// Which of the query's words `word` is, case apart (`buf` is reused
    /// across a text's words, so folding allocates once a text).
    fn place_of(&self, word: &str, buf: &mut String) -> Option<usize> {
        if word.is_ascii() {
            return self.words.iter().position(|w| w.eq_ignore_ascii_case(word));
        }
        fold_into(word, buf);
        self.words.iter().position(|w| w == buf)
    }

    /// Whether `text` matches, and its hits: one pass over its words, then
    /// one over their places per phrase (8 at most), so the cost is the
    /// text's length times the query's words however the hits fall.
    pub fn matches(&self, text: &str) -> Option<Found> {
        let mut buf = String::new();
        let places: Vec<Option<usize>> = words(text).map(|w| self.place_of(w, &mut buf)).collect();
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

/// Whether `c` starts or goes on with a word: alphanumeric, and a token
/// character to SQLite's unicode61 with its default categories (`L* N* Co`,
/// and code points its table does not know).
pub fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    c.is_alphanumeric() && is_fts5_token_category(fts5_category(u32::from(c)))
}

/// Whether `c` is a combining mark (Mn, Mc, Me), which goes on with the
/// word before it.
fn is_mark(c: char) -> bool {
    !c.is_ascii() && matches!(fts5_category(u32::from(c)), 10..=12)
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
    fn words_are_letters_and_digits_and_their_marks() {
        assert_eq!(words("alpha -beta \"gamma delta\" or x_1").count(), 7);
        // A circled letter is alphabetic to Rust, a symbol (So) to SQLite.
        assert_eq!(words("zⒶzⒶz").collect::<Vec<_>>(), ["z", "z", "z"]);
        // A vowel sign stays in its word; a mark with no word before it is
        // none.
        assert_eq!(words("किताब कुतुब").collect::<Vec<_>>(), ["किताब", "कुतुब"]);
        assert_eq!(words("\u{0301}a").collect::<Vec<_>>(), ["a"]);
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
        // As PostgreSQL reads them: `or` after an exclusion, a trailing or
        // punctuated `or` a word, a lone `-`, `--`, punctuation between
        // words.
        assert_eq!(found("-draft or final", "final"), Some(1));
        assert_eq!(found("deploy or", "deploy now"), None);
        assert_eq!(found("deploy or", "deploy or not"), Some(2));
        assert_eq!(found("a ,or b", "a b"), None);
        assert_eq!(found("error - timeout", "error timeout"), None);
        assert_eq!(found("error - timeout", "error"), Some(1));
        assert_eq!(found("--a", "a"), Some(1));
        assert_eq!(found("std::io", "io and std"), Some(2));
        // Words joined by other punctuation are a phrase; `or` before
        // punctuation and more words is the operator; `-` before
        // punctuation negates nothing.
        assert_eq!(found("brain_recall", "recall the brain"), None);
        assert_eq!(found("brain_recall", "brain_recall"), Some(2));
        assert_eq!(found("deploy or, rollback", "rollback"), Some(1));
        assert_eq!(found("error -, timeout", "error timeout"), Some(2));
        assert_eq!(found("a or -", "a"), Some(1));
        // Case apart, accents kept: İ lowercases to i, titlecase letters too.
        assert_eq!(found("istanbul", "İstanbul"), Some(1));
        assert_eq!(found("İSTANBUL", "istanbul"), Some(1));
        assert_eq!(found("ǅemal", "ǅemal"), Some(1));
        assert_eq!(found("café", "CAFÉ"), Some(1));
        assert_eq!(found("cafe", "café"), None);
        assert_eq!(found("क", "किताब"), None);
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
