//! Executions against moto: big run data round-trips intact, limited reads,
//! search with cursor and count.

mod data_support;

use serde_json::{json, Value};
use store::data::executions::{DataSelection, ExecutionMode, ExecutionSearch, ExecutionStatus, NewExecution};

fn new_exec(wf: &str, mode: ExecutionMode, started: &str) -> NewExecution {
    NewExecution {
        workflow_id: wf.into(),
        mode,
        status: ExecutionStatus::Running,
        started_at: Some(started.into()),
        retry_of: None,
        retention_secs: None,
    }
}

/// n8n-shaped run data with `nodes` nodes of `items` items each; item text
/// is pseudo-random so compression cannot make it small.
fn run_data(nodes: usize, items: usize, text_len: usize) -> Value {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut text = || {
        (0..text_len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                char::from(b'a' + (seed % 26) as u8)
            })
            .collect::<String>()
    };
    let mut run_data = serde_json::Map::new();
    for n in 0..nodes {
        let items: Vec<Value> =
            (0..items).map(|i| json!({"json": {"i": i, "text": text()}, "pairedItem": {"item": i}})).collect();
        run_data.insert(
            format!("Node {n}"),
            json!([{"startTime": 1_700_000_000_000u64 + n as u64, "executionTime": 5, "executionStatus": "success",
                    "source": [null], "data": {"main": [items]}}]),
        );
    }
    json!({
        "startData": {},
        "resultData": {"runData": run_data, "lastNodeExecuted": format!("Node {}", nodes - 1)},
        "executionData": {"contextData": {}, "nodeExecutionStack": [], "waitingExecution": {}}
    })
}

#[tokio::test]
async fn two_megabytes_of_run_data_round_trip_intact() {
    let (_env, data) = data_support::data().await;
    let e = data.executions.create(new_exec("wf1", ExecutionMode::Manual, "2025-01-01T00:00:00Z")).await.unwrap();
    let big = run_data(4, 500, 1000);
    let size = serde_json::to_vec(&big).unwrap().len();
    assert!(size > 2_000_000, "{size}");
    data.executions.finish(&e.id, ExecutionStatus::Success, Some(&big)).await.unwrap();
    let back = data.executions.get_data(&e.id, &DataSelection::default()).await.unwrap().unwrap();
    assert_eq!(back, big, "every byte back, nothing truncated");
    let meta = data.executions.get(&e.id).await.unwrap().unwrap();
    assert_eq!(meta.status, ExecutionStatus::Success);
    assert!(meta.stopped_at.is_some());

    // One node, two items per output.
    let sel = DataSelection { node_names: Some(vec!["Node 2".into()]), max_items: Some(2) };
    let part = data.executions.get_data(&e.id, &sel).await.unwrap().unwrap();
    let rd = part["resultData"]["runData"].as_object().unwrap();
    assert_eq!(rd.keys().collect::<Vec<_>>(), ["Node 2"]);
    assert_eq!(rd["Node 2"][0]["data"]["main"][0].as_array().unwrap().len(), 2);
    assert_eq!(rd["Node 2"][0]["data"]["main"][0][1], big["resultData"]["runData"]["Node 2"][0]["data"]["main"][0][1]);
    assert_eq!(part["resultData"]["lastNodeExecuted"], json!("Node 3"));

    // Saving again replaces the data (old parts are gone, reads see the new).
    let small = run_data(1, 1, 10);
    data.executions.save_data(&e.id, &small).await.unwrap();
    assert_eq!(data.executions.get_data(&e.id, &DataSelection::default()).await.unwrap().unwrap(), small);
    // Data without runData round-trips as written, too.
    let odd = json!({"resultData": {"error": {"message": "boom"}}});
    data.executions.save_data(&e.id, &odd).await.unwrap();
    assert_eq!(data.executions.get_data(&e.id, &DataSelection::default()).await.unwrap().unwrap(), odd);

    data.executions.delete(&e.id).await.unwrap();
    assert!(data.executions.get(&e.id).await.unwrap().is_none());
}

#[tokio::test]
async fn search_filters_pages_and_counts() {
    let (_env, data) = data_support::data().await;
    let x = &data.executions;
    let mut ids = Vec::new();
    for i in 0..12 {
        let e = x.create(new_exec("wfA", ExecutionMode::Trigger, &format!("2025-01-01T00:{i:02}:00Z"))).await.unwrap();
        let status = if i % 3 == 0 { ExecutionStatus::Error } else { ExecutionStatus::Success };
        x.finish(&e.id, status, None).await.unwrap();
        ids.push(e.id);
    }
    let other = x.create(new_exec("wfB", ExecutionMode::Manual, "2025-01-01T00:30:00Z")).await.unwrap();
    x.set_status(&other.id, ExecutionStatus::Waiting, Some(Some("2025-01-02T00:00:00Z".into()))).await.unwrap();

    let all = x
        .search(&ExecutionSearch { workflow_ids: vec!["wfA".into(), "wfB".into()], ..Default::default() })
        .await
        .unwrap();
    assert_eq!(all.count, 13);
    assert_eq!(all.data[0].id, other.id, "newest first");
    assert_eq!(all.data[0].wait_till.as_deref(), Some("2025-01-02T00:00:00.000Z"));

    let errors = ExecutionSearch {
        workflow_ids: vec!["wfA".into()],
        statuses: vec![ExecutionStatus::Error],
        ..Default::default()
    };
    let page = x.search(&errors).await.unwrap();
    assert_eq!(page.count, 4);
    assert!(page.data.iter().all(|e| e.status == ExecutionStatus::Error));

    let window = ExecutionSearch {
        workflow_ids: vec!["wfA".into()],
        started_after: Some("2025-01-01T00:02:00Z".into()),
        started_before: Some("2025-01-01T00:06:00Z".into()),
        ..Default::default()
    };
    assert_eq!(x.search(&window).await.unwrap().count, 3);
    assert!(x.search(&ExecutionSearch { started_after: Some("soon".into()), ..window.clone() }).await.is_err());

    // Cursor pages of 5 over wfA: every id once, newest first.
    let mut seen = Vec::new();
    let mut last = None;
    loop {
        let q = ExecutionSearch {
            workflow_ids: vec!["wfA".into()],
            limit: Some(5),
            last_id: last.clone(),
            ..Default::default()
        };
        let page = x.search(&q).await.unwrap();
        assert_eq!(page.count, 12);
        if page.data.is_empty() {
            break;
        }
        last = page.data.last().map(|e| e.id.clone());
        seen.extend(page.data.into_iter().map(|e| e.id));
    }
    let mut expected = ids.clone();
    expected.reverse();
    assert_eq!(seen, expected);

    // Retry links.
    x.set_retry_success(&ids[0], &ids[1]).await.unwrap();
    assert_eq!(x.get(&ids[0]).await.unwrap().unwrap().retry_success_id.as_deref(), Some(ids[1].as_str()));
}

#[tokio::test]
async fn cleanup_deletes_only_finished_manual_runs_started_before_the_cutoff() {
    let (_env, data) = data_support::data().await;
    let x = &data.executions;
    let finished = |mode, started: &'static str| async move {
        let e = x.create(new_exec("wfC", mode, started)).await.unwrap();
        x.finish(&e.id, ExecutionStatus::Success, None).await.unwrap();
        e.id
    };
    let old_manual = finished(ExecutionMode::Manual, "2025-01-01T00:00:00Z").await;
    let new_manual = finished(ExecutionMode::Manual, "2025-01-03T00:00:00Z").await;
    let old_trigger = finished(ExecutionMode::Trigger, "2025-01-01T00:00:00Z").await;
    let running = x.create(new_exec("wfC", ExecutionMode::Manual, "2025-01-01T00:00:00Z")).await.unwrap().id;
    let old_manual_2 = finished(ExecutionMode::Manual, "2025-01-01T12:00:00Z").await;
    let other_wf = x.create(new_exec("wfD", ExecutionMode::Manual, "2025-01-01T00:00:00Z")).await.unwrap();
    x.finish(&other_wf.id, ExecutionStatus::Success, None).await.unwrap();

    assert!(x.delete_for_workflow("wfC", &[ExecutionMode::Manual], Some("yesterday")).await.is_err());
    let n = x.delete_for_workflow("wfC", &[ExecutionMode::Manual], Some("2025-01-02T00:00:00Z")).await.unwrap();
    assert_eq!(n, 2, "the two old finished manual runs of wfC");
    for gone in [&old_manual, &old_manual_2] {
        assert!(x.get(gone).await.unwrap().is_none());
    }
    for kept in [&new_manual, &old_trigger, &running, &other_wf.id] {
        assert!(x.get(kept).await.unwrap().is_some(), "{kept} is kept");
    }
    // Without a cutoff every finished manual run goes; the running one stays.
    assert_eq!(x.delete_for_workflow("wfC", &[ExecutionMode::Manual], None).await.unwrap(), 1);
    assert!(x.get(&running).await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_during_repeated_saves_always_see_a_whole_document() {
    let (_env, data) = data_support::data().await;
    let e = data.executions.create(new_exec("wf-p", ExecutionMode::Manual, "2025-01-01T00:00:00Z")).await.unwrap();
    let doc = |n: usize| {
        let mut d = run_data(3, 5, 50);
        d["resultData"]["lastNodeExecuted"] = json!(format!("save {n}"));
        d
    };
    data.executions.save_data(&e.id, &doc(0)).await.unwrap();
    // A running execution's progress: saved again and again while read.
    let writer = {
        let data = data.clone();
        let id = e.id.clone();
        tokio::spawn(async move {
            for n in 1..=40 {
                data.executions.save_data(&id, &doc(n)).await.unwrap();
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let got = data.executions.get_data(&e.id, &DataSelection::default()).await;
        let got = got.unwrap_or_else(|err| panic!("read {reads} failed: {err}")).unwrap();
        assert_eq!(got["resultData"]["runData"].as_object().map(|m| m.len()), Some(3), "read {reads}");
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads > 5, "{reads} reads overlapped the saves");
}

/// `{"a": {"a": … {"end": true}}}`, `depth` objects deep (built in a loop:
/// `json!` nesting would recurse).
fn nested(depth: usize) -> Value {
    let mut v = json!({ "end": true });
    for _ in 1..depth {
        v = json!({ "a": v });
    }
    v
}

/// Run data whose one item's `json` is `depth` objects deep, shaped as the
/// engine stores it (the item's `json` is 9 levels into the document, 6 into
/// its node's runs, which are stored apart).
fn deep_run_data(depth: usize) -> Value {
    json!({
        "startData": {},
        "resultData": {"runData": {"Set": [{"startTime": 1, "executionTime": 1, "executionStatus": "success",
            "source": [null], "data": {"main": [[{"json": nested(depth), "pairedItem": {"item": 0}}]]}}]},
            "lastNodeExecuted": "Set"},
        "executionData": {"contextData": {}, "nodeExecutionStack": [], "waitingExecution": {},
            "engineState": {"nodeContext": {"Wait": {"kept": nested(depth)}}}}
    })
}

#[tokio::test]
async fn deeply_nested_items_read_back_as_written() {
    let (_env, data) = data_support::data().await;
    // The Code node accepts results 256 levels deep; the Set node's dotted
    // names nest deeper. serde_json's parser alone stops at 128 levels.
    // Before reads lifted that limit, 121 levels read back and 122 did not.
    for depth in [121, 122, 250, 503] {
        let e = data.executions.create(new_exec("wf-deep", ExecutionMode::Manual, "2025-01-01T00:00:00Z")).await.unwrap();
        let doc = deep_run_data(depth);
        data.executions.finish(&e.id, ExecutionStatus::Success, Some(&doc)).await.unwrap();
        let back = data.executions.get_data(&e.id, &DataSelection::default()).await;
        let back = back.unwrap_or_else(|err| panic!("{depth} levels: {err}")).unwrap();
        assert!(back == doc, "{depth} levels read back as written");
        // The base alone (what a Wait's resume reads first) too.
        let base = DataSelection { node_names: Some(vec![]), max_items: None };
        let back = data.executions.get_data(&e.id, &base).await.unwrap().unwrap();
        assert!(back["executionData"] == doc["executionData"], "{depth} levels: base");
    }
}

#[tokio::test]
async fn too_deep_run_data_fails_the_save_and_keeps_what_was_there() {
    let (_env, data) = data_support::data().await;
    let e = data.executions.create(new_exec("wf-deep", ExecutionMode::Manual, "2025-01-01T00:00:00Z")).await.unwrap();
    let before = deep_run_data(250);
    data.executions.save_data(&e.id, &before).await.unwrap();
    // The item's json is 9 levels into the document: 503 levels are the most.
    let at_cap = deep_run_data(503);
    data.executions.save_data(&e.id, &at_cap).await.unwrap();
    assert!(data.executions.get_data(&e.id, &DataSelection::default()).await.unwrap().unwrap() == at_cap);
    for too_deep in [504, 1000] {
        let err = data.executions.save_data(&e.id, &deep_run_data(too_deep)).await.unwrap_err().to_string();
        assert!(err.contains("nested too deeply to store (more than 512 levels)"), "{err}");
        let back = data.executions.get_data(&e.id, &DataSelection::default()).await.unwrap().unwrap();
        assert!(back == at_cap, "the last good save stays readable");
    }
}
