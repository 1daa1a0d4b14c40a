//! Receipts and the per-tenant hash chain (SPEC §1 Receipt).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::digest::sha256_hex;
use crate::ids::{ReceiptId, SessionId, TenantId};
use crate::model::{Caller, CredentialKind, rfc3339};

/// `prev_hash` of a tenant's first receipt.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What a receipt records before it is placed in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptDraft {
    pub tool: String,
    pub project: Option<String>,
    pub session_id: Option<SessionId>,
    pub elevated: bool,
    /// `ok` or the error code.
    pub outcome: String,
    pub request_digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    pub receipt_id: ReceiptId,
    pub tenant: TenantId,
    pub seq: i64,
    #[serde(serialize_with = "ser_time")]
    pub at: DateTime<Utc>,
    pub tool: String,
    pub project: Option<String>,
    pub session_id: Option<SessionId>,
    pub credential_kind: CredentialKind,
    pub subject: String,
    pub token_id: Option<String>,
    pub connection_id: Option<String>,
    pub elevated: bool,
    pub outcome: String,
    pub request_digest: String,
    pub prev_hash: String,
    pub hash: String,
}

fn ser_time<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(t))
}

impl Receipt {
    /// Place a draft after the tenant's current tip (`prev_seq`, `prev_hash`).
    pub fn chain(
        caller: &Caller,
        draft: ReceiptDraft,
        prev_seq: i64,
        prev_hash: &str,
        at: DateTime<Utc>,
    ) -> Self {
        let mut r = Receipt {
            receipt_id: ReceiptId::new_random(),
            tenant: caller.tenant.clone(),
            seq: prev_seq + 1,
            at,
            tool: draft.tool,
            project: draft.project,
            session_id: draft.session_id.or(caller.tracer_session),
            credential_kind: caller.kind,
            subject: caller.subject.clone(),
            token_id: caller.token_id.clone(),
            connection_id: caller.connection_id.clone(),
            elevated: draft.elevated,
            outcome: draft.outcome,
            request_digest: draft.request_digest,
            prev_hash: prev_hash.to_owned(),
            hash: String::new(),
        };
        r.hash = r.compute_hash();
        r
    }

    /// SHA-256 over the canonical receipt without its own `hash`, `prev_hash` included,
    /// so editing any field or any earlier receipt breaks the chain.
    pub fn compute_hash(&self) -> String {
        let frame = self.frame();
        frame.hash(&self.prev_hash, self.seq)
    }

    /// The canonical receipt (keys sorted, compact) around its two chain
    /// fields. A store that appends under the tip lock in one statement hashes
    /// `frame` with the tip it found there; it is the same text
    /// [`Receipt::compute_hash`] hashes, so the chain verifies the same.
    /// `prev_hash` and `seq` go between the pieces as they are: lowercase hex
    /// and a number, which JSON writes unescaped.
    pub fn frame(&self) -> ReceiptFrame {
        let s = |v: &str| Value::String(v.to_owned()).to_string();
        let opt = |v: Option<&str>| v.map_or_else(|| "null".to_owned(), s);
        // Keys in byte order: at, connection_id, credential_kind, elevated,
        // outcome, prev_hash | project, receipt_id, request_digest, seq |
        // session_id, subject, tenant, token_id, tool.
        let before_prev = format!(
            r#"{{"at":{},"connection_id":{},"credential_kind":{},"elevated":{},"outcome":{},"prev_hash":""#,
            s(&rfc3339(&self.at)),
            opt(self.connection_id.as_deref()),
            s(self.credential_kind.as_str()),
            self.elevated,
            s(&self.outcome),
        );
        let before_seq = format!(
            r#"","project":{},"receipt_id":{},"request_digest":{},"seq":"#,
            opt(self.project.as_deref()),
            s(&self.receipt_id.to_string()),
            s(&self.request_digest),
        );
        let after_seq = format!(
            r#","session_id":{},"subject":{},"tenant":{},"token_id":{},"tool":{}}}"#,
            opt(self.session_id.map(|id| id.to_string()).as_deref()),
            s(&self.subject),
            s(self.tenant.as_str()),
            opt(self.token_id.as_deref()),
            s(&self.tool),
        );
        ReceiptFrame {
            before_prev,
            before_seq,
            after_seq,
        }
    }

    /// A receipt whose chain fields are not known yet: the store places it
    /// (`seq`, `prev_hash`, `hash`) where it holds the tenant's tip.
    pub fn unplaced(caller: &Caller, draft: ReceiptDraft, at: DateTime<Utc>) -> Self {
        Self::chain(caller, draft, -1, "", at)
    }

    /// The receipt at the place a store gave it, if the store's hash is the
    /// one this receipt's canonical text has there: a store whose hashing
    /// drifted from [`Receipt::compute_hash`] fails the call (a store that
    /// places receipts with its commit, as PostgreSQL does, checks its
    /// hashing before it serves; `receipts verify` names any such receipt).
    pub fn placed(mut self, seq: i64, prev_hash: String, hash: String) -> Option<Self> {
        self.seq = seq;
        self.prev_hash = prev_hash;
        self.hash = hash;
        (self.compute_hash() == self.hash).then_some(self)
    }
}

/// The canonical text of a receipt around `prev_hash` and `seq`:
/// `before_prev ‖ prev_hash ‖ before_seq ‖ seq ‖ after_seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptFrame {
    pub before_prev: String,
    pub before_seq: String,
    pub after_seq: String,
}

impl ReceiptFrame {
    pub fn hash(&self, prev_hash: &str, seq: i64) -> String {
        let text = format!(
            "{}{prev_hash}{}{seq}{}",
            self.before_prev, self.before_seq, self.after_seq
        );
        sha256_hex(text.as_bytes())
    }
}

/// Why a chain fails verification, at the first bad `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainFault {
    HashMismatch,
    PrevHashMismatch,
    SeqGap,
}

/// A chain checked a page at a time, in `seq` order from the first receipt:
/// what it holds is the last hash and a count, so checking a chain takes one
/// page's memory, not the chain's.
#[derive(Debug, Clone)]
pub struct ChainCheck {
    prev: String,
    next_seq: i64,
    count: usize,
}

impl Default for ChainCheck {
    fn default() -> Self {
        Self {
            prev: GENESIS_HASH.to_owned(),
            next_seq: 1,
            count: 0,
        }
    }
}

impl ChainCheck {
    /// Check the receipts that follow those checked so far; the first bad
    /// seq and why.
    pub fn feed<'a>(
        &mut self,
        receipts: impl IntoIterator<Item = &'a Receipt>,
    ) -> Result<(), (i64, ChainFault)> {
        for r in receipts {
            if r.seq != self.next_seq {
                return Err((r.seq, ChainFault::SeqGap));
            }
            if r.prev_hash != self.prev {
                return Err((r.seq, ChainFault::PrevHashMismatch));
            }
            if r.compute_hash() != r.hash {
                return Err((r.seq, ChainFault::HashMismatch));
            }
            self.prev.clone_from(&r.hash);
            self.next_seq += 1;
            self.count += 1;
        }
        Ok(())
    }

    /// The seq of the last receipt checked (0 before the first).
    pub fn checked_to(&self) -> i64 {
        self.next_seq - 1
    }

    /// That the last receipt checked is the recorded tip, which also catches
    /// receipts deleted from the end: `Ok(count)` or the first bad seq.
    pub fn finish(self, tip: (i64, &str)) -> Result<usize, (i64, ChainFault)> {
        let last_seq = self.checked_to();
        if last_seq != tip.0 {
            return Err((last_seq + 1, ChainFault::SeqGap));
        }
        if self.prev != tip.1 {
            return Err((last_seq, ChainFault::HashMismatch));
        }
        Ok(self.count)
    }
}

/// Walk receipts in `seq` order; `Ok(count)` or the first bad seq and why.
pub fn verify_chain<'a>(
    receipts: impl IntoIterator<Item = &'a Receipt>,
) -> Result<usize, (i64, ChainFault)> {
    let mut check = ChainCheck::default();
    check.feed(receipts)?;
    Ok(check.count)
}

/// Verify a chain and that its last receipt is the recorded tip, which also
/// catches receipts deleted from the end. `Ok(count)` or the first bad seq.
pub fn verify_with_tip(receipts: &[Receipt], tip: (i64, &str)) -> Result<usize, (i64, ChainFault)> {
    let mut check = ChainCheck::default();
    check.feed(receipts)?;
    check.finish(tip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, now_micros};

    fn caller() -> Caller {
        Caller {
            tenant: TenantId::parse("t1").unwrap_or_else(|_| unreachable!()),
            kind: CredentialKind::Jwt,
            credential_id: "iss|sub".into(),
            subject: "sub".into(),
            role: Role::Agent,
            connection_id: Some("c1".into()),
            token_id: None,
            tracer_session: None,
        }
    }

    fn draft(outcome: &str) -> ReceiptDraft {
        ReceiptDraft {
            tool: "brain_session_end".into(),
            project: Some("p".into()),
            session_id: None,
            elevated: false,
            outcome: outcome.into(),
            request_digest: "d".into(),
        }
    }

    fn chain(n: usize) -> Vec<Receipt> {
        let mut out: Vec<Receipt> = Vec::new();
        for _ in 0..n {
            let (seq, prev) = out
                .last()
                .map(|r| (r.seq, r.hash.clone()))
                .unwrap_or((0, GENESIS_HASH.to_owned()));
            out.push(Receipt::chain(
                &caller(),
                draft("ok"),
                seq,
                &prev,
                now_micros(),
            ));
        }
        out
    }

    /// The canonical text the frame builds is the one the chain was defined
    /// over (every field, keys sorted, compact), with or without the
    /// optional fields and with text that JSON escapes.
    #[test]
    fn the_frame_is_the_canonical_receipt() {
        use crate::digest::canonical_json;
        let mut plain = chain(2).remove(1);
        let mut odd = plain.clone();
        odd.subject = "ä \"quoted\" \\ \n\u{1}".into();
        odd.connection_id = None;
        odd.project = None;
        odd.token_id = Some("tok,\"prev_hash\":\"".into());
        odd.session_id = Some(SessionId::new_random());
        plain.elevated = true;
        for r in [plain, odd] {
            let body = serde_json::json!({
                "receipt_id": r.receipt_id.to_string(),
                "tenant": r.tenant.as_str(),
                "seq": r.seq,
                "at": rfc3339(&r.at),
                "tool": r.tool,
                "project": r.project,
                "session_id": r.session_id.map(|s| s.to_string()),
                "credential_kind": r.credential_kind.as_str(),
                "subject": r.subject,
                "token_id": r.token_id,
                "connection_id": r.connection_id,
                "elevated": r.elevated,
                "outcome": r.outcome,
                "request_digest": r.request_digest,
                "prev_hash": r.prev_hash,
            });
            let f = r.frame();
            let text = format!(
                "{}{}{}{}{}",
                f.before_prev, r.prev_hash, f.before_seq, r.seq, f.after_seq
            );
            assert_eq!(text, canonical_json(&body));
            assert_eq!(r.compute_hash(), sha256_hex(text.as_bytes()));
            let hash = r.compute_hash();
            let again = Receipt::unplaced(&caller(), draft("ok"), r.at);
            assert!(again.placed(r.seq, r.prev_hash.clone(), hash).is_none());
        }
        let r = chain(1).remove(0);
        let (seq, prev, hash) = (r.seq, r.prev_hash.clone(), r.hash.clone());
        let mut unplaced = r.clone();
        unplaced.seq = -1;
        unplaced.prev_hash = String::new();
        unplaced.hash = String::new();
        assert_eq!(unplaced.placed(seq, prev, hash), Some(r));
    }

    #[test]
    fn a_fresh_chain_verifies() {
        assert_eq!(verify_chain(&chain(5)), Ok(5));
        // Page by page, the same answers as whole.
        let c = chain(5);
        let tip = (5, c[4].hash.as_str());
        let mut paged = ChainCheck::default();
        for page in c.chunks(2) {
            paged.feed(page).unwrap();
        }
        assert_eq!(paged.checked_to(), 5);
        assert_eq!(paged.finish(tip), Ok(5));
        let mut gap = ChainCheck::default();
        gap.feed(&c[..2]).unwrap();
        assert_eq!(gap.feed(&c[3..]), Err((4, ChainFault::SeqGap)));
        let mut short = ChainCheck::default();
        short.feed(&c[..4]).unwrap();
        assert_eq!(short.finish(tip), Err((5, ChainFault::SeqGap)));
        assert_eq!(verify_chain(&[]), Ok(0));
    }

    #[test]
    fn an_edited_field_is_a_hash_mismatch() {
        let mut c = chain(4);
        c[2].outcome = "session_closed".into();
        assert_eq!(verify_chain(&c), Err((3, ChainFault::HashMismatch)));
    }

    #[test]
    fn a_deleted_receipt_is_a_seq_gap() {
        let mut c = chain(4);
        c.remove(1);
        assert_eq!(verify_chain(&c), Err((3, ChainFault::SeqGap)));
    }

    #[test]
    fn a_renumbered_deletion_is_a_prev_hash_mismatch() {
        let mut c = chain(4);
        c.remove(1);
        c[1].seq = 2;
        c[2].seq = 3;
        assert_eq!(verify_chain(&c), Err((2, ChainFault::PrevHashMismatch)));
    }

    #[test]
    fn a_truncated_chain_is_caught_by_the_tip() {
        let c = chain(4);
        let tip = (c[3].seq, c[3].hash.as_str());
        assert_eq!(verify_with_tip(&c, tip), Ok(4));
        assert_eq!(verify_with_tip(&c[..3], tip), Err((4, ChainFault::SeqGap)));
        assert_eq!(verify_with_tip(&[], (0, GENESIS_HASH)), Ok(0));
    }

    #[test]
    fn a_rehashed_edit_still_breaks_the_next_link() {
        let mut c = chain(3);
        c[0].outcome = "forged".into();
        c[0].hash = c[0].compute_hash();
        assert_eq!(verify_chain(&c), Err((2, ChainFault::PrevHashMismatch)));
    }
}
