//! Projects this process has seen committed. Tenants and projects are never
//! deleted, so once one is known to exist its `ensure_project` statement (three
//! conflict-checked inserts, one round trip) can be skipped for good: a
//! `brain_remember` into a known project is one statement shorter.

use std::collections::HashSet;
use std::sync::Mutex;

use brain_core::ids::{ProjectKey, TenantId};

/// At most this many (tenant, project) pairs are kept; past it the set starts
/// over, which costs one `ensure_project` per project again, never a wrong answer.
const CAP: usize = 65_536;

#[derive(Default)]
pub struct KnownProjects {
    set: Mutex<HashSet<(String, String)>>,
}

impl KnownProjects {
    fn with<R>(&self, f: impl FnOnce(&mut HashSet<(String, String)>) -> R) -> R {
        match self.set.lock() {
            Ok(mut g) => f(&mut g),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// The set's key for a project. Two small allocations: cheap next to the
    /// round trip a hit saves.
    pub fn key(tenant: &TenantId, project: &ProjectKey) -> (String, String) {
        (tenant.as_str().to_owned(), project.as_str().to_owned())
    }

    pub fn contains(&self, tenant: &TenantId, project: &ProjectKey) -> bool {
        let key = Self::key(tenant, project);
        self.with(|s| s.contains(&key))
    }

    pub fn forget_all(&self) {
        self.with(HashSet::clear);
    }

    /// Called only after the transaction that ensured them committed.
    pub fn add(&self, pairs: Vec<(String, String)>) {
        if pairs.is_empty() {
            return;
        }
        self.with(|s| {
            if s.len() + pairs.len() > CAP {
                s.clear();
            }
            s.extend(pairs);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_after_add_and_bounded() {
        let k = KnownProjects::default();
        let t = TenantId::parse("t1").unwrap();
        let p = ProjectKey::parse("p").unwrap();
        assert!(!k.contains(&t, &p));
        k.add(vec![("t1".into(), "p".into())]);
        assert!(k.contains(&t, &p));
        let other = TenantId::parse("t2").unwrap();
        assert!(!k.contains(&other, &p), "keyed by tenant too");
        k.add((0..CAP).map(|i| ("t".to_owned(), i.to_string())).collect());
        assert!(k.with(|s| s.len()) <= CAP);
        k.add(vec![("t1".into(), "p".into())]);
        k.forget_all();
        assert!(!k.contains(&t, &p));
    }
}
