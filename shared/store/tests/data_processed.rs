//! Remove Duplicates' history against moto: versioned writes that never
//! lose a concurrent writer's values, the size limit, and deletion with the
//! workflow.

mod data_support;

use serde_json::{json, Value};
use store::data::workflows::{NewWorkflow, WorkflowBody};
use store::data::ProcessedData;

/// Appends `value` to the record's list the way the engine does: read,
/// change, conditional write, retry when another writer got there first.
async fn append(p: &ProcessedData, wf: &str, value: &str) -> u32 {
    let mut tries = 0;
    loop {
        tries += 1;
        let (mut list, version) = match p.load(wf, "").await.expect("load") {
            Some((Value::Array(a), v)) => (a, Some(v)),
            Some((other, _)) => panic!("unexpected record {other}"),
            None => (vec![], None),
        };
        list.push(json!(value));
        if p.save(wf, "", &Value::Array(list), version).await.expect("save") {
            return tries;
        }
    }
}

#[tokio::test]
async fn versioned_writes_keep_every_concurrent_value() {
    let (_env, data) = data_support::data().await;
    let p = &data.processed_data;
    let wf = format!("wf-{}", uuid::Uuid::new_v4().simple());
    assert_eq!(p.load(&wf, "").await.unwrap(), None);

    // Creation only when absent, then one version after another.
    assert!(p.save(&wf, "", &json!(["a"]), None).await.unwrap());
    assert!(!p.save(&wf, "", &json!(["lost"]), None).await.unwrap(), "a second creation loses");
    assert_eq!(p.load(&wf, "").await.unwrap(), Some((json!(["a"]), 1)));
    assert!(!p.save(&wf, "", &json!(["stale"]), Some(0)).await.unwrap(), "a stale version loses");
    assert!(p.save(&wf, "", &json!(["a", "b"]), Some(1)).await.unwrap());
    assert_eq!(p.load(&wf, "").await.unwrap(), Some((json!(["a", "b"]), 2)));

    // Contexts are separate records.
    assert!(p.save(&wf, "n:node-1", &json!({"latest": 3}), None).await.unwrap());
    assert_eq!(p.load(&wf, "n:node-1").await.unwrap(), Some((json!({"latest": 3}), 1)));

    // Eight writers at once: every value lands exactly once.
    let racers = (0..8).map(|i| {
        let (p, wf) = (p.clone(), wf.clone());
        tokio::spawn(async move { append(&p, &wf, &format!("r{i}")).await })
    });
    let tries: Vec<u32> = futures::future::join_all(racers).await.into_iter().map(|r| r.unwrap()).collect();
    let (list, version) = p.load(&wf, "").await.unwrap().unwrap();
    let mut got: Vec<String> = list.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    got.sort();
    let mut want: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).chain((0..8).map(|i| format!("r{i}"))).collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(version, 10);
    assert!(tries.iter().sum::<u32>() >= 8);

    p.delete(&wf, "").await.unwrap();
    assert_eq!(p.load(&wf, "").await.unwrap(), None);
    assert!(p.load(&wf, "n:node-1").await.unwrap().is_some(), "other contexts stay");
}

#[tokio::test]
async fn refuses_a_history_larger_than_an_item_and_goes_with_its_workflow() {
    let (_env, data) = data_support::data().await;
    let p = &data.processed_data;
    // Random hashes hardly compress: 30 000 of them are far beyond one item.
    let big: Vec<Value> = (0..30_000).map(|i| json!(format!("{:x}", md5_like(i)))).collect();
    let err = p.save("wf-big", "", &Value::Array(big), None).await.expect_err("too large");
    assert!(err.to_string().contains("lower the node's history size"), "{err}");
    assert_eq!(p.load("wf-big", "").await.unwrap(), None, "nothing written");

    let (alice, home) = data_support::user(&data, "alice").await;
    let body = WorkflowBody {
        nodes: json!([{"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}}]),
        connections: json!({}),
        settings: json!({}),
        pin_data: json!({}),
        meta: json!({}),
    };
    let new = NewWorkflow { name: "Dedupe".into(), description: None, project_id: home.id.clone(), folder_id: None, body, available_in_mcp: false };
    let wf = data.workflows.create(new, &alice).await.unwrap();
    assert!(p.save(&wf.meta.id, "", &json!(["x"]), None).await.unwrap());
    assert!(data.workflows.archive(&wf.meta.id).await.unwrap());
    data.workflows.delete_permanently(&wf.meta.id).await.unwrap();
    assert_eq!(p.load(&wf.meta.id, "").await.unwrap(), None);
}

/// A well-mixed 128-bit value per index (splitmix64 twice), like an md5.
fn md5_like(i: u64) -> u128 {
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (u128::from(mix(i)) << 64) | u128::from(mix(i ^ 0xdead_beef))
}
