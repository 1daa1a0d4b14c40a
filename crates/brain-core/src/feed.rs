//! Focus changes as MCP resources see them (SPEC §2.11): the resource URIs of
//! a project's base focus and slots, and the change event a store announces
//! after an applied end or relay commits. The event carries ids and the new
//! revision, never the body: a subscriber reads the body with its own rights.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{ProjectKey, SlotName, TenantId};
use crate::model::Revision;

/// `brain://projects/{project}/focus` and `brain://projects/{project}/slots/{slot}`.
pub const FOCUS_TEMPLATE: &str = "brain://projects/{project}/focus";
pub const SLOT_TEMPLATE: &str = "brain://projects/{project}/slots/{slot}";
const PREFIX: &str = "brain://projects/";

/// A body that changed: which tenant, project and slot, at which revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FocusChange {
    pub tenant: TenantId,
    pub project: ProjectKey,
    pub slot: Option<SlotName>,
    pub revision: Revision,
}

/// Called by a store for every committed change, on whichever replica wrote it.
pub type FocusListener = Arc<dyn Fn(FocusChange) + Send + Sync>;

/// The URI of a project's base focus (`slot` None) or of one slot. Names may
/// hold `/`, which the URI carries as `%2F`, as RFC 6570 expands `{project}`:
/// so every URI has exactly one reading.
pub fn uri(project: &ProjectKey, slot: Option<&SlotName>) -> String {
    let p = encode(project.as_str());
    match slot {
        None => format!("{PREFIX}{p}/focus"),
        Some(s) => format!("{PREFIX}{p}/slots/{}", encode(s.as_str())),
    }
}

/// Parse a resource URI back into its project and slot; `None` when it is not
/// one of the two shapes or its names break the identifier rules.
pub fn parse_uri(uri: &str) -> Option<(ProjectKey, Option<SlotName>)> {
    let rest = uri.strip_prefix(PREFIX)?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [p, "focus"] => Some((ProjectKey::parse(&decode(p)?).ok()?, None)),
        [p, "slots", s] => Some((
            ProjectKey::parse(&decode(p)?).ok()?,
            Some(SlotName::parse(&decode(s)?).ok()?),
        )),
        _ => None,
    }
}

fn encode(name: &str) -> String {
    name.replace('/', "%2F")
}

/// `%2F` (either case) back to `/`; any other escape is not a name.
fn decode(part: &str) -> Option<String> {
    let out = part.replace("%2F", "/").replace("%2f", "/");
    (!out.contains('%')).then_some(out)
}

impl FocusChange {
    pub fn uri(&self) -> String {
        uri(&self.project, self.slot.as_ref())
    }

    /// The change an end's or relay's stored outcome made, if it wrote a body:
    /// applied, not a dry run, not a replay.
    pub fn from_close(tenant: &TenantId, outcome: &Value) -> Option<Self> {
        if !outcome["focus_outcome"]
            .as_str()
            .is_some_and(crate::flow::wrote_body)
            || outcome["dry_run"] == true
            || outcome["replayed"] == true
        {
            return None;
        }
        let session = &outcome["session"];
        let project = ProjectKey::parse(session["project"].as_str()?).ok()?;
        let slot = match session["bound_slot"].as_str() {
            Some(s) => Some(SlotName::parse(s).ok()?),
            None => None,
        };
        Some(Self {
            tenant: tenant.clone(),
            project,
            slot,
            revision: outcome["focus_revision_at_end"].as_i64()?,
        })
    }

    /// The wire form between replicas (PostgreSQL NOTIFY payload).
    pub fn to_payload(&self) -> String {
        serde_json::to_string(&Payload {
            t: self.tenant.as_str().to_owned(),
            p: self.project.as_str().to_owned(),
            s: self.slot.as_ref().map(|s| s.as_str().to_owned()),
            r: self.revision,
        })
        .unwrap_or_default()
    }

    pub fn from_payload(payload: &str) -> Option<Self> {
        let p: Payload = serde_json::from_str(payload).ok()?;
        Some(Self {
            tenant: TenantId::parse(&p.t).ok()?,
            project: ProjectKey::parse(&p.p).ok()?,
            slot: match p.s {
                Some(s) => Some(SlotName::parse(&s).ok()?),
                None => None,
            },
            revision: p.r,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct Payload {
    t: String,
    p: String,
    s: Option<String>,
    r: Revision,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_even_with_slashes_in_names() {
        let p = ProjectKey::parse("team/app").unwrap();
        let s = SlotName::parse("ui").unwrap();
        assert_eq!(parse_uri(&uri(&p, None)), Some((p.clone(), None)));
        assert_eq!(parse_uri(&uri(&p, Some(&s))), Some((p.clone(), Some(s))));
        assert_eq!(uri(&p, None), "brain://projects/team%2Fapp/focus");
        let odd = ProjectKey::parse("a/slots/b").unwrap();
        let tricky = SlotName::parse("b/focus").unwrap();
        assert_eq!(parse_uri(&uri(&odd, None)), Some((odd, None)));
        let a = ProjectKey::parse("a").unwrap();
        assert_eq!(parse_uri(&uri(&a, Some(&tricky))), Some((a, Some(tricky))));
    }

    #[test]
    fn malformed_uris_are_refused() {
        for bad in [
            "",
            "brain://projects/",
            "brain://projects//focus",
            "brain://projects/x",
            "brain://projects/x/slots/",
            "brain://projects/x y/focus",
            "file:///etc/passwd",
            "brain://projects/x/focus\u{0}",
            "brain://projects/a/b/focus",
            "brain://projects/a%20b/focus",
            "brain://projects/x/slots/y/z",
        ] {
            assert_eq!(parse_uri(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn payloads_round_trip_and_reject_bad_names() {
        let c = FocusChange {
            tenant: TenantId::parse("acme").unwrap(),
            project: ProjectKey::parse("p").unwrap(),
            slot: None,
            revision: 3,
        };
        assert_eq!(FocusChange::from_payload(&c.to_payload()), Some(c));
        assert_eq!(
            FocusChange::from_payload(r#"{"t":"a b","p":"p","s":null,"r":1}"#),
            None
        );
    }
}
