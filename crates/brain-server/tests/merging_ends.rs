//! Black-box: `brain_session_end` with `merge: true` (three-way merges of a
//! stale proposal into the current focus), on both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use brain_core::ids::TenantId;
use brain_core::receipt::verify_chain;
use brain_testkit::app::{Client, TestApp, ok, refused, spawn_app, token};
use serde_json::{Value, json};

async fn start(c: &Client, key: &str) -> String {
    start_on(c, key, None).await
}

/// A session of `key` on the base focus, or bound to `slot`.
async fn start_on(c: &Client, key: &str, slot: Option<&str>) -> String {
    let mut args = json!({"project": "p", "client_key": key});
    if let Some(slot) = slot {
        args["slot"] = json!(slot);
    }
    let s = ok(c, "brain_session_start", args).await;
    s["session"]["session_id"].as_str().unwrap().to_owned()
}

fn end(id: &str, key: &str, body: &str, rev: i64, merge: bool) -> Value {
    json!({"session_id": id, "expected_client_key": key, "summary": "s",
           "next_focus": body, "expected_focus_revision": rev, "merge": merge})
}

const LINES: [&str; 5] = [
    "goal: ship the importer",
    "decision: keep the old schema",
    "owner: ana",
    "deadline: friday",
    "risk: none known",
];

fn body(change: &[(usize, &str)]) -> String {
    let mut lines: Vec<String> = LINES.iter().map(|l| (*l).to_owned()).collect();
    for (i, text) in change {
        lines[*i] = (*text).to_owned();
    }
    lines.join("\n") + "\n"
}

/// The focus at revision 1 (the five lines), then two agents that read it:
/// `a` ends first with its change (revision 2); `b` is left to end.
async fn two_readers(app: &TestApp, a_change: (usize, &str)) -> (Client, String) {
    two_readers_on(app, a_change, None).await
}

/// [`two_readers`] on the base focus, or on `slot` (every session bound to it).
async fn two_readers_on(
    app: &TestApp,
    a_change: (usize, &str),
    slot: Option<&str>,
) -> (Client, String) {
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let first = start_on(&a, "a", slot).await;
    ok(
        &a,
        "brain_session_end",
        end(&first, "a", &body(&[]), 0, false),
    )
    .await;
    let sa = start_on(&a, "a", slot).await;
    let sb = start_on(&b, "b", slot).await;
    let done = ok(
        &a,
        "brain_session_end",
        end(&sa, "a", &body(&[a_change]), 1, false),
    )
    .await;
    assert_eq!(done["focus_revision_at_end"], 2);
    (b, sb)
}

#[tokio::test]
async fn disjoint_edits_merge_into_a_new_revision() {
    let app = spawn_app().await;
    let (b, sb) = two_readers(&app, (0, "goal: ship the importer by v2")).await;
    let args = end(&sb, "b", &body(&[(4, "risk: the vendor API")]), 1, true);

    let mut dry_args = args.clone();
    dry_args["dry_run"] = json!(true);
    let dry = ok(&b, "brain_session_end", dry_args).await;
    assert_eq!(dry["would"], "merged", "{dry}");
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], 2, "a dry run writes nothing");

    let out = ok(&b, "brain_session_end", args.clone()).await;
    assert_eq!(out["focus_outcome"], "merged", "{out}");
    assert_eq!(out["session"]["status"], "ended");
    assert_eq!(out["focus_revision_at_end"], 3);
    assert_eq!(
        out["merge"],
        json!({"base_revision": 1, "onto_revision": 2, "conflicts": false})
    );
    let want = body(&[
        (0, "goal: ship the importer by v2"),
        (4, "risk: the vendor API"),
    ]);
    assert_eq!(out["focus_at_end"]["body"], want.as_str());
    let diff = out["focus_diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- revision 2\n+++ revision 3\n"),
        "{diff}"
    );
    assert!(diff.contains("+risk: the vendor API"), "{diff}");
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(
        (f["revision"].clone(), f["body"].clone()),
        (json!(3), json!(want))
    );

    // The same call again is answered from what was stored.
    let again = ok(&b, "brain_session_end", args).await;
    assert_eq!(again["replayed"], true);
    assert_eq!(again["focus_outcome"], "merged");
    assert_eq!(again["focus_revision_at_end"], 3);
    assert_eq!(again["merge"], out["merge"]);
}

#[tokio::test]
async fn overlapping_edits_conflict_and_write_nothing() {
    let app = spawn_app().await;
    let (b, sb) = two_readers(&app, (2, "owner: bo")).await;
    let out = ok(
        &b,
        "brain_session_end",
        end(&sb, "b", &body(&[(2, "owner: cy")]), 1, true),
    )
    .await;
    assert_eq!(out["focus_outcome"], "conflict", "{out}");
    assert_eq!(out["session"]["status"], "conflicted");
    assert_eq!(out["merge"]["conflicts"], true);
    let text = out["merge"]["text"].as_str().unwrap();
    assert!(
        text.contains("<<<<<<<") && text.contains(">>>>>>>"),
        "{text}"
    );
    assert!(
        text.contains("owner: bo") && text.contains("owner: cy"),
        "{text}"
    );
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], 2);
    assert_eq!(f["body"], body(&[(2, "owner: bo")]).as_str());
}

#[tokio::test]
async fn a_shrink_through_a_merge_is_refused() {
    let app = spawn_app().await;
    let (b, sb) = two_readers(&app, (0, "goal: ship the importer by v2")).await;
    // b dropped three of the five lines: the merge keeps a's change but the
    // merged body is under 70% of the current one.
    let short = format!("{}\n{}\n", LINES[0], LINES[1]);
    let e = refused(&b, "brain_session_end", end(&sb, "b", &short, 1, true)).await;
    assert_eq!(e["code"], "base_focus_shrink", "{e}");
    // The revision b read is stale: it hears so, and which one is current.
    assert_eq!(e["details"]["stale"], true, "{e}");
    assert_eq!(e["details"]["current_revision"], 2, "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("merged into revision 2"), "{message}");
    let s = ok(&b, "brain_session_get", json!({"session_id": sb})).await;
    assert_eq!(s["session"]["status"], "open", "{s}");
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], 2);
}

/// Without merge the same stale end conflicts, as the seed's end does.
#[tokio::test]
async fn without_merge_a_stale_end_still_conflicts() {
    let app = spawn_app().await;
    let (b, sb) = two_readers(&app, (0, "goal: ship the importer by v2")).await;
    let out = ok(
        &b,
        "brain_session_end",
        end(&sb, "b", &body(&[(4, "risk: x")]), 1, false),
    )
    .await;
    assert_eq!(out["focus_outcome"], "conflict");
    assert!(out.get("merge").is_none(), "{out}");
}

/// Twenty agents read one revision and each changes its own line; they end
/// at once with merge. Every change lands: none is lost to another's write,
/// and the receipt chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_racing_merges_lose_no_change() {
    const N: usize = 20;
    let app = spawn_app().await;
    // A line per agent, with an unchanged line between any two of them.
    let line = |i: usize, state: &str| format!("item {i}: {state}\n-- kept {i}\n");
    let base: String = (0..N).map(|i| line(i, "todo")).collect();
    let seed = app.client(&token("acme", "seed")).await;
    let first = start(&seed, "seed").await;
    ok(
        &seed,
        "brain_session_end",
        end(&first, "seed", &base, 0, false),
    )
    .await;

    let mut agents = Vec::new();
    for i in 0..N {
        let c = app.client(&token("acme", &format!("agent-{i}"))).await;
        let id = start(&c, &format!("k{i}")).await;
        agents.push((c, id));
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = Vec::new();
    for (i, (c, id)) in agents.into_iter().enumerate() {
        let barrier = barrier.clone();
        let mine: String = (0..N)
            .map(|j| line(j, if j == i { "done" } else { "todo" }))
            .collect();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let out = ok(
                &c,
                "brain_session_end",
                end(&id, &format!("k{i}"), &mine, 1, true),
            )
            .await;
            out["focus_outcome"].as_str().unwrap().to_owned()
        }));
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let f = ok(&seed, "brain_focus_get", json!({"project": "p"})).await;
    let text = f["body"].as_str().unwrap();
    let done = (0..N)
        .filter(|i| text.contains(&format!("item {i}: done\n")))
        .count();
    let wrote = outcomes
        .iter()
        .filter(|o| *o == "merged" || *o == "applied")
        .count();
    assert_eq!(
        done, wrote,
        "every applied change is in the focus: {outcomes:?}"
    );
    assert_eq!(wrote, N, "{outcomes:?}");
    assert_eq!(f["revision"], 1 + N as i64);
    let receipts = app
        .store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap();
    let n = receipts.len();
    assert_eq!(verify_chain(&receipts), Ok(n), "linear and gap-free");
}

/// A session bound to a slot merges into the slot's focus; the base focus
/// is not touched.
#[tokio::test]
async fn a_bound_session_merges_into_its_slot() {
    let app = spawn_app().await;
    let (b, sb) = two_readers_on(&app, (0, "goal: ship the importer by v2"), Some("ui")).await;
    let out = ok(
        &b,
        "brain_session_end",
        end(&sb, "b", &body(&[(3, "deadline: monday")]), 1, true),
    )
    .await;
    assert_eq!(out["focus_outcome"], "merged", "{out}");
    assert_eq!(out["focus_revision_at_end"], 3);
    let slot = ok(&b, "brain_focus_get", json!({"project": "p", "slot": "ui"})).await;
    let want = body(&[
        (0, "goal: ship the importer by v2"),
        (3, "deadline: monday"),
    ]);
    assert_eq!(
        (slot["revision"].clone(), slot["body"].clone()),
        (json!(3), json!(want))
    );
    let base = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(base["revision"], 0, "the base focus is not written: {base}");
}

/// A blank proposal is refused before any merge, as without merge: the
/// merge must not make a body out of nothing.
#[tokio::test]
async fn a_blank_proposal_with_merge_is_refused_before_merging() {
    let app = spawn_app().await;
    let (b, sb) = two_readers(&app, (0, "goal: ship the importer by v2")).await;
    for blank in ["", "  \n "] {
        let e = refused(&b, "brain_session_end", end(&sb, "b", blank, 1, true)).await;
        assert_eq!(e["code"], "invalid_argument", "{e}");
    }
    let s = ok(&b, "brain_session_get", json!({"session_id": sb})).await;
    assert_eq!(s["session"]["status"], "open", "{s}");
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], 2);
}

/// A conflicted merge is answered again, as stored, to the same call.
#[tokio::test]
async fn a_conflicted_merge_replays_its_answer() {
    let app = spawn_app().await;
    let (b, sb) = two_readers(&app, (2, "owner: bo")).await;
    let args = end(&sb, "b", &body(&[(2, "owner: cy")]), 1, true);
    let out = ok(&b, "brain_session_end", args.clone()).await;
    assert_eq!(out["focus_outcome"], "conflict", "{out}");
    let again = ok(&b, "brain_session_end", args).await;
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(again["focus_outcome"], "conflict");
    assert_eq!(again["merge"], out["merge"]);
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], 2);
}

/// Bodies over the merge's line bound are not merged (its cost is bounded):
/// the end conflicts, says why, and writes nothing.
#[tokio::test]
async fn a_body_over_the_merge_bound_conflicts_without_merging() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let long = |changed: Option<(usize, &str)>| -> String {
        (0..=brain_core::merge::MERGE_MAX_LINES)
            .map(|i| match changed {
                Some((at, text)) if at == i => format!("{text}\n"),
                _ => format!("line {i}\n"),
            })
            .collect()
    };
    let first = start(&a, "a").await;
    ok(
        &a,
        "brain_session_end",
        end(&first, "a", &long(None), 0, false),
    )
    .await;
    let sa = start(&a, "a").await;
    let sb = start(&b, "b").await;
    ok(
        &a,
        "brain_session_end",
        end(&sa, "a", &long(Some((0, "first line, by a"))), 1, false),
    )
    .await;
    let out = ok(
        &b,
        "brain_session_end",
        end(&sb, "b", &long(Some((900, "late line, by b"))), 1, true),
    )
    .await;
    assert_eq!(out["focus_outcome"], "conflict", "{out}");
    assert_eq!(out["merge"]["text"], Value::Null);
    let why = out["merge"]["not_merged"].as_str().unwrap();
    assert!(why.contains("size bound"), "{why}");
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], 2);
}
