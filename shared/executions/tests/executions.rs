//! Executions against moto: inline and queued runs, waiting and resuming,
//! cancel, timeout, duplicate deliveries, crashes, credentials that stay
//! inside, large run data, data tables and sub-workflows.

mod common;

use common::*;
use executions::{Dispatch, ExecutionStatus, RunResult, SkipReason, StartRequest, WorkflowRef};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::data::executions::ExecutionMode;

fn manual(id: &str) -> StartRequest {
    StartRequest::new(WorkflowRef::Draft(id.to_owned()), ExecutionMode::Manual)
}

fn set_if_workflow() -> Value {
    let mut wf = chain(vec![
        trigger(),
        set("Set", "n", json!(7)),
        if_gt("If", "n", 5.0),
    ]);
    wf["nodes"]
        .as_array_mut()
        .unwrap()
        .push(set("Big", "size", json!("big")));
    wf["nodes"]
        .as_array_mut()
        .unwrap()
        .push(set("Small", "size", json!("small")));
    wf["connections"]["If"] = json!({ "main": [[{ "node": "Big", "type": "main", "index": 0 }], [{ "node": "Small", "type": "main", "index": 0 }]] });
    wf
}

fn assert_set_if_ran(doc: &Value) {
    assert_eq!(output(doc, "Set", 0), vec![json!({"n": 7})]);
    assert_eq!(output(doc, "If", 0), vec![json!({"n": 7})], "true branch");
    assert!(output(doc, "If", 1).is_empty());
    assert_eq!(output(doc, "Big", 0), vec![json!({"n": 7, "size": "big"})]);
    assert!(doc["resultData"]["runData"].get("Small").is_none());
}

#[tokio::test]
async fn manual_execution_runs_inline() {
    let c = ctx().await;
    let wf = c.workflow(&set_if_workflow()).await;
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    assert!(o.error.is_none());
    assert_set_if_ran(&c.run_data(o.execution_id.as_str()).await);
    let rec = c
        .data
        .executions
        .get(o.execution_id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.workflow_id, wf);
    assert_eq!(rec.mode, ExecutionMode::Manual);
    assert!(rec.started_at.is_some() && rec.stopped_at.is_some());
    // Nothing was queued on the inline path.
    assert!(c.receive(Duration::ZERO).await.is_empty());
}

#[tokio::test]
async fn manual_execution_runs_through_the_queue_and_a_duplicate_delivery_does_nothing() {
    let c = ctx().await;
    let wf = c.workflow(&set_if_workflow()).await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::New
    );
    let batch = c.receive(Duration::from_secs(5)).await;
    assert_eq!(batch.len(), 1);
    assert!(batch[0].body.as_deref().unwrap().contains(id.as_str()));
    let failed = c.executor.handle_queue_batch(batch.clone()).await;
    assert!(failed.is_empty());
    let o = c.executor.outcome(id.as_str()).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    assert_set_if_ran(&c.run_data(id.as_str()).await);
    let first = c.data.executions.get(id.as_str()).await.unwrap().unwrap();

    // The same message again: acknowledged, nothing runs or changes.
    assert!(c.executor.handle_queue_batch(batch).await.is_empty());
    assert_eq!(
        c.executor.run_execution(id.as_str()).await.unwrap(),
        RunResult::Skipped(SkipReason::AlreadyFinished)
    );
    assert_eq!(
        c.data.executions.get(id.as_str()).await.unwrap().unwrap(),
        first
    );
}

#[tokio::test]
async fn concurrent_deliveries_run_an_execution_once() {
    let c = ctx_with(executions::ExecutorSettings {
        inline_wait: Duration::from_secs(5),
        ..settings()
    })
    .await;
    // A 1 s in-process wait keeps the first run busy while the others arrive.
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            wait_secs("Wait", 1),
            set("Set", "done", json!(1)),
        ]))
        .await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    let mut runs = Vec::new();
    for _ in 0..3 {
        let ex = c.executor.clone();
        let id = id.clone();
        runs.push(tokio::spawn(async move {
            ex.run_execution(id.as_str()).await.unwrap()
        }));
    }
    let mut ran = 0;
    for r in runs {
        match r.await.unwrap() {
            RunResult::Ran(o) => {
                assert_eq!(o.status, ExecutionStatus::Success);
                ran += 1;
            }
            RunResult::Skipped(reason) => assert!(
                matches!(
                    reason,
                    SkipReason::RunningElsewhere | SkipReason::AlreadyFinished
                ),
                "{reason:?}"
            ),
        }
    }
    assert_eq!(ran, 1, "exactly one delivery runs it");
    assert_eq!(
        c.run_data(id.as_str()).await["resultData"]["runData"]["Set"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_wait_parks_the_execution_and_resume_due_finishes_it() {
    let c = ctx().await;
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            set("Before", "a", json!(1)),
            // long enough that a loaded machine checks "not due" before it is
            wait_secs("Wait", 5),
            set("After", "b", json!(2)),
        ]))
        .await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    let start_msg = c.receive(Duration::from_secs(5)).await;
    assert!(c
        .executor
        .handle_queue_batch(start_msg.clone())
        .await
        .is_empty());
    let o = c.executor.outcome(id.as_str()).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Waiting, "{o:?}");
    assert!(o.wait_till.is_some());
    let doc = c.run_data(id.as_str()).await;
    assert_eq!(output(&doc, "Before", 0), vec![json!({"a": 1})]);
    assert!(doc["resultData"]["runData"].get("After").is_none());
    assert!(
        doc["executionData"]["engineState"]["stack"].is_array(),
        "the engine's state is stored for the resume"
    );

    // Not due yet: neither the sweep nor a duplicate delivery resumes it.
    assert_eq!(c.executor.sweeper().resume_due().await.unwrap(), 0);
    assert_eq!(
        c.executor.run_execution(id.as_str()).await.unwrap(),
        RunResult::Skipped(SkipReason::NotDue)
    );

    tokio::time::sleep(Duration::from_millis(5300)).await;
    // Due: the sweep queues it (the fallback for waits beyond SQS's delay)...
    assert_eq!(c.executor.sweeper().resume_due().await.unwrap(), 1);
    // ...and the index entry moved ahead: the next sweep does not queue it again.
    assert_eq!(c.executor.sweeper().resume_due().await.unwrap(), 0);
    // Two messages: the delayed one sent when it parked, and the sweep's.
    let mut resume = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    while resume.len() < 2 && tokio::time::Instant::now() < deadline {
        resume.extend(c.receive(Duration::from_secs(1)).await);
    }
    assert_eq!(resume.len(), 2, "{resume:?}");
    for m in &resume {
        assert!(m.body.as_deref().unwrap().contains(id.as_str()));
    }
    // Both delivered: one resumes it, the other does nothing.
    let mut results = Vec::new();
    for m in resume {
        results.push(c.executor.handle_queue_batch(vec![m]).await);
    }
    assert!(results.iter().all(Vec::is_empty));
    assert_eq!(
        c.run_data(id.as_str()).await["resultData"]["runData"]["After"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "resumed once"
    );
    let o = c.executor.outcome(id.as_str()).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    assert!(o.wait_till.is_none());
    let doc = c.run_data(id.as_str()).await;
    assert_eq!(output(&doc, "After", 0), vec![json!({"a": 1, "b": 2})]);
    assert_eq!(
        doc["resultData"]["runData"]["Before"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "nodes before the wait ran once"
    );
    assert!(
        doc.get("executionData").is_none(),
        "a finished execution keeps no engine state"
    );
}

#[tokio::test]
async fn a_stopped_execution_ends_canceled() {
    let c = ctx_with(executions::ExecutorSettings {
        inline_wait: Duration::from_secs(60),
        ..settings()
    })
    .await;
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            wait_secs("Wait", 30),
            set("After", "b", json!(2)),
        ]))
        .await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    let ex = c.executor.clone();
    let run_id = id.clone();
    let run = tokio::spawn(async move { ex.run_execution(run_id.as_str()).await.unwrap() });
    // Let it claim and start sleeping in the Wait node.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while c.executor.outcome(id.as_str()).await.unwrap().status != ExecutionStatus::Running {
        assert!(tokio::time::Instant::now() < deadline, "never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let began = std::time::Instant::now();
    let o = c.executor.stop_execution(id.as_str()).await.unwrap();
    assert_eq!(
        o.status,
        ExecutionStatus::Running,
        "a running execution stops at its next check"
    );
    let RunResult::Ran(o) = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap()
    else {
        panic!("not ran")
    };
    assert_eq!(o.status, ExecutionStatus::Canceled, "{o:?}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "stopped promptly: {:?}",
        began.elapsed()
    );
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::Canceled
    );
    assert!(c.run_data(id.as_str()).await["resultData"]["runData"]
        .get("After")
        .is_none());
    // Stopping again is a no-op.
    assert_eq!(
        c.executor.stop_execution(id.as_str()).await.unwrap().status,
        ExecutionStatus::Canceled
    );
}

#[tokio::test]
async fn stopping_a_queued_or_waiting_execution_cancels_it_at_once() {
    let c = ctx().await;
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            wait_secs("Wait", 3600),
            set("After", "b", json!(2)),
        ]))
        .await;
    // Queued, never run: canceled directly; its message then does nothing.
    let queued = c.executor.start_execution(manual(&wf)).await.unwrap();
    assert_eq!(
        c.executor
            .stop_execution(queued.as_str())
            .await
            .unwrap()
            .status,
        ExecutionStatus::Canceled
    );
    assert!(c
        .executor
        .handle_queue_batch(c.receive(Duration::from_secs(5)).await)
        .await
        .is_empty());
    assert_eq!(
        c.executor.outcome(queued.as_str()).await.unwrap().status,
        ExecutionStatus::Canceled
    );
    // Waiting (parked for an hour): canceled directly.
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Waiting);
    let stopped = c
        .executor
        .stop_execution(o.execution_id.as_str())
        .await
        .unwrap();
    assert_eq!(stopped.status, ExecutionStatus::Canceled);
    assert!(stopped.wait_till.is_none());
}

#[tokio::test]
async fn a_timeout_ends_the_execution_with_a_clear_error() {
    let c = ctx_with(executions::ExecutorSettings {
        inline_wait: Duration::from_secs(60),
        ..settings()
    })
    .await;
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            wait_secs("Wait", 30),
            set("After", "b", json!(2)),
        ]))
        .await;
    let mut req = manual(&wf);
    req.timeout = Some(Duration::from_secs(2));
    let began = std::time::Instant::now();
    let id = c.executor.start_execution(req).await.unwrap();
    assert!(c
        .executor
        .handle_queue_batch(c.receive(Duration::from_secs(5)).await)
        .await
        .is_empty());
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    let o = c.executor.outcome(id.as_str()).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Error, "{o:?}");
    let msg = o.error.unwrap();
    assert!(msg.contains("timed out after 2 s"), "{msg}");
    let doc = c.run_data(id.as_str()).await;
    assert!(
        doc["resultData"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{}",
        doc["resultData"]["error"]
    );
}

#[tokio::test]
async fn an_execution_whose_executor_died_is_marked_crashed() {
    let c = ctx_with(executions::ExecutorSettings {
        inline_wait: Duration::from_secs(60),
        lease: Duration::from_secs(1),
        ..settings()
    })
    .await;
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            wait_secs("Wait", 4),
            set("After", "b", json!(2)),
        ]))
        .await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    let msg = c.receive(Duration::from_secs(5)).await;
    // The executor "dies" mid-run: its task is dropped, so nobody renews the lease.
    let ex = c.executor.clone();
    let run_id = id.clone();
    let run = tokio::spawn(async move { ex.run_execution(run_id.as_str()).await });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while c.executor.outcome(id.as_str()).await.unwrap().status != ExecutionStatus::Running {
        assert!(tokio::time::Instant::now() < deadline, "never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    run.abort();
    // Under a live lease a redelivery leaves it alone.
    assert_eq!(
        c.executor.run_execution(id.as_str()).await.unwrap(),
        RunResult::Skipped(SkipReason::RunningElsewhere)
    );
    assert_eq!(c.executor.sweeper().mark_crashed().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(c.executor.sweeper().mark_crashed().await.unwrap(), 1);
    let o = c.executor.outcome(id.as_str()).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Crashed, "{o:?}");
    assert!(o.error.unwrap().contains("stopped unexpectedly"));
    // The redelivered message does not run it again.
    assert!(c.executor.handle_queue_batch(msg).await.is_empty());
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::Crashed
    );
    assert_eq!(c.executor.sweeper().mark_crashed().await.unwrap(), 0);
    // Let the orphaned engine thread finish: its late result must not land.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::Crashed
    );
}

#[tokio::test]
async fn a_redelivery_after_an_expired_lease_marks_it_crashed_instead_of_rerunning() {
    let c = ctx_with(executions::ExecutorSettings {
        inline_wait: Duration::from_secs(60),
        lease: Duration::from_secs(1),
        ..settings()
    })
    .await;
    let wf = c
        .workflow(&chain(vec![trigger(), wait_secs("Wait", 4)]))
        .await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    let ex = c.executor.clone();
    let run_id = id.clone();
    let run = tokio::spawn(async move { ex.run_execution(run_id.as_str()).await });
    while c.executor.outcome(id.as_str()).await.unwrap().status != ExecutionStatus::Running {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    run.abort();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        c.executor.run_execution(id.as_str()).await.unwrap(),
        RunResult::Skipped(SkipReason::MarkedCrashed)
    );
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::Crashed
    );
}

const SECRET: &str = "s3cr3t-HEADER-VALUE-7781";

/// A local HTTP server that records the `x-api-key` header it receives.
async fn header_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen_in = seen.clone();
    let app = axum::Router::new().route(
        "/echo",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let seen = seen_in.clone();
            async move {
                let key = headers
                    .get("x-api-key")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                seen.lock().unwrap().push(key.clone());
                axum::Json(json!({ "authorized": key == SECRET }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/echo"), seen)
}

/// A credential of `kind` whose secret is `{name: <field>, value: SECRET}`.
async fn secret_credential(c: &Ctx, name: &str, kind: &str, field: &str) -> store::data::credentials::Credential {
    c.data
        .credentials
        .create(store::data::credentials::NewCredential {
            name: name.into(),
            kind: kind.into(),
            description: None,
            project_id: c.project.id.clone(),
            is_managed: false,
            is_global: false,
            secret: store::data::credentials::SecretData::new(json!({ "name": field, "value": SECRET })),
        })
        .await
        .unwrap()
}

async fn header_auth_workflow(c: &Ctx, url: &str) -> String {
    let cred = secret_credential(c, "Echo key", "httpHeaderAuth", "X-Api-Key").await;
    let mut http = node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({ "url": url, "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth", "options": {} }),
    );
    http["credentials"] = json!({ "httpHeaderAuth": { "id": cred.id, "name": cred.name } });
    c.workflow(&chain(vec![trigger(), http])).await
}

#[tokio::test]
async fn credentials_are_decrypted_only_inside_the_run() {
    let c = ctx().await;
    let (url, seen) = header_server().await;
    let wf = header_auth_workflow(&c, &url).await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    assert!(c
        .executor
        .handle_queue_batch(c.receive(Duration::from_secs(5)).await)
        .await
        .is_empty());
    let o = c.executor.outcome(id.as_str()).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![SECRET.to_owned()],
        "the server got the secret"
    );
    let doc = c.run_data(id.as_str()).await;
    assert_eq!(output(&doc, "HTTP", 0), vec![json!({"authorized": true})]);
    assert!(
        !doc.to_string().contains(SECRET),
        "run data holds no secret"
    );
    assert!(!format!("{o:?}").contains(SECRET));
    // Every stored item of the execution (meta, index, run data parts, decompressed).
    let items = c
        .data
        .executions
        .table()
        .query_prefix(&format!("exec#{id}"), "", false)
        .await
        .unwrap();
    for item in items {
        for v in item.values() {
            let text = match v {
                aws_sdk_dynamodb::types::AttributeValue::B(b) => {
                    // Run data parts are DEFLATE streams: look inside them.
                    let inflated = store::data::db::decompress(b.as_ref()).unwrap_or_default();
                    String::from_utf8_lossy(&inflated).into_owned()
                        + &String::from_utf8_lossy(b.as_ref())
                }
                other => format!("{other:?}"),
            };
            assert!(!text.contains(SECRET), "an execution item holds the secret");
        }
    }
}

#[tokio::test]
async fn the_ssrf_guard_stays_on_in_production_settings() {
    let c = ctx_with(executions::ExecutorSettings {
        http: executions::HttpPolicy::PublicOnly,
        ..settings()
    })
    .await;
    let (url, seen) = header_server().await;
    let wf = header_auth_workflow(&c, &url).await;
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Error, "{o:?}");
    assert!(
        o.error.as_deref().unwrap_or("").contains("not allowed"),
        "{o:?}"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "no request reached the local server"
    );
}

#[tokio::test]
async fn two_megabytes_of_run_data_round_trip_through_the_executor() {
    let c = ctx().await;
    let wf = c
        .workflow(&chain(vec![trigger(), set("Set", "tag", json!("x"))]))
        .await;
    // Pseudo-random text, so compression cannot make it small.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut text = || -> String {
        (0..1000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                char::from(b'a' + (seed % 26) as u8)
            })
            .collect()
    };
    let items: Vec<engine::Item> = (0..1100)
        .map(|i| engine::Item {
            json: json!({"i": i, "text": text()}).into(),
            ..Default::default()
        })
        .collect();
    let mut req = manual(&wf);
    req.pin_data = BTreeMap::from([("Trigger".to_owned(), items.clone())]);
    let id = c.executor.start_execution(req).await.unwrap();
    assert!(c
        .executor
        .handle_queue_batch(c.receive(Duration::from_secs(5)).await)
        .await
        .is_empty());
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::Success
    );
    let doc = c.run_data(id.as_str()).await;
    assert!(
        doc.to_string().len() > 2_000_000,
        "{}",
        doc.to_string().len()
    );
    let out = output(&doc, "Set", 0);
    assert_eq!(out.len(), 1100);
    for (i, (got, want)) in out.iter().zip(&items).enumerate() {
        assert_eq!(got["text"], want.json["text"], "item {i}");
        assert_eq!(got["tag"], json!("x"));
    }
    assert_eq!(output(&doc, "Trigger", 0).len(), 1100);
}

#[tokio::test]
async fn data_table_nodes_read_and_write_the_projects_tables() {
    let c = ctx().await;
    let table = c
        .data
        .data_tables
        .create(
            &c.project.id,
            "people",
            &[store::data::data_tables::NewColumn {
                name: "name".into(),
                kind: store::data::data_tables::ColumnType::String,
            }],
        )
        .await
        .unwrap();
    let insert = node(
        "Insert",
        "n8n-nodes-base.dataTable",
        1.0,
        json!({ "operation": "insert", "dataTableId": { "__rl": true, "mode": "id", "value": table.id },
                "columns": { "mappingMode": "defineBelow", "value": { "name": "Ada" } } }),
    );
    let get = node(
        "Get",
        "n8n-nodes-base.dataTable",
        1.0,
        json!({ "operation": "get", "dataTableId": { "__rl": true, "mode": "id", "value": table.id }, "matchType": "allConditions",
                "filters": { "conditions": [{ "keyName": "name", "condition": "eq", "keyValue": "Ada" }] } }),
    );
    let wf = c.workflow(&chain(vec![trigger(), insert, get])).await;
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    let doc = c.run_data(o.execution_id.as_str()).await;
    let rows = output(&doc, "Get", 0);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["name"], json!("Ada"));
    assert_eq!(c.data.data_tables.count_rows(&table.id).await.unwrap(), 1);
}

/// A table of the test's project with these `(name, type)` columns.
async fn data_table(c: &Ctx, name: &str, columns: &[(&str, &str)]) -> store::data::data_tables::DataTable {
    let columns: Vec<store::data::data_tables::NewColumn> = columns
        .iter()
        .map(|(n, t)| serde_json::from_value(json!({ "name": n, "type": t })).unwrap())
        .collect();
    c.data
        .data_tables
        .create(&c.project.id, name, &columns)
        .await
        .unwrap()
}

async fn table_rows(c: &Ctx, id: &str) -> Vec<Value> {
    let page = c
        .data
        .data_tables
        .query(id, &store::data::data_tables::RowQuery::default())
        .await
        .unwrap();
    page.data.into_iter().map(Value::Object).collect()
}

/// Runs once, whatever number of items comes in.
fn once(mut node: Value) -> Value {
    node["executeOnce"] = json!(true);
    node
}

async fn run_manual(c: &Ctx, wf: &str, pinned: Vec<Value>) -> (ExecutionStatus, Value) {
    let mut req = manual(wf);
    if !pinned.is_empty() {
        let items = pinned
            .into_iter()
            .map(|j| engine::Item {
                json: j.into(),
                ..Default::default()
            })
            .collect();
        req.pin_data = BTreeMap::from([("Trigger".to_owned(), items)]);
    }
    let o = c
        .executor
        .execute_and_wait(req, Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    let doc = c.run_data(o.execution_id.as_str()).await;
    (o.status, doc)
}

#[tokio::test]
async fn data_table_1_1_inserts_in_bulk_and_optimize_bulk_answers_with_the_count() {
    let c = ctx().await;
    let table = data_table(&c, "scores", &[("name", "string"), ("n", "number")]).await;
    let id = json!({ "__rl": true, "mode": "id", "value": table.id });
    let insert = node(
        "Insert",
        "n8n-nodes-base.dataTable",
        1.1,
        json!({ "resource": "row", "operation": "insert", "dataTableId": id,
                "columns": { "mappingMode": "autoMapInputData", "value": null } }),
    );
    // Fed the inserted rows: their id/createdAt/updatedAt are dropped, as n8n does.
    let bulk = node(
        "Bulk",
        "n8n-nodes-base.dataTable",
        1.1,
        json!({ "resource": "row", "operation": "insert", "dataTableId": id,
                "columns": { "mappingMode": "autoMapInputData", "value": null },
                "options": { "optimizeBulk": true } }),
    );
    // Descending by default, ties in id order.
    let top = node(
        "Top",
        "n8n-nodes-base.dataTable",
        1.1,
        json!({ "resource": "row", "operation": "get", "dataTableId": id, "limit": 2,
                "orderBy": true, "orderByColumn": "n" }),
    );
    let wf = c.workflow(&chain(vec![trigger(), insert, bulk, top])).await;
    let pinned = vec![json!({"name": "a", "n": 1}), json!({"name": "b", "n": 2}), json!({"name": "c", "n": 3})];
    let (status, doc) = run_manual(&c, &wf, pinned).await;
    assert_eq!(status, ExecutionStatus::Success, "{doc}");
    let inserted = output(&doc, "Insert", 0);
    assert_eq!(inserted.len(), 3, "{inserted:?}");
    assert_eq!((inserted[2]["name"].clone(), inserted[2]["n"].clone()), (json!("c"), json!(3)));
    assert!(inserted[0]["id"].is_number() && inserted[0]["createdAt"].is_string());
    // One item for the whole batch, the rows themselves not returned.
    assert_eq!(output(&doc, "Bulk", 0), vec![json!({"success": true, "insertedRows": 3})]);
    let rows = table_rows(&c, &table.id).await;
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[5]["name"], json!("c"));
    let top: Vec<(Value, Value)> = output(&doc, "Top", 0).iter().map(|r| (r["id"].clone(), r["n"].clone())).collect();
    assert_eq!(top, [(rows[2]["id"].clone(), json!(3)), (rows[5]["id"].clone(), json!(3))]);
}

#[tokio::test]
async fn data_table_dry_runs_return_before_and_after_and_write_nothing() {
    let c = ctx().await;
    let table = data_table(&c, "people", &[("name", "string"), ("n", "number")]).await;
    let seeded = c
        .data
        .data_tables
        .insert_rows(
            &table.id,
            &[
                json!({"name": "Ada", "n": 1}).as_object().unwrap().clone(),
                json!({"name": "Bob", "n": 2}).as_object().unwrap().clone(),
            ],
        )
        .await
        .unwrap();
    let id = json!({ "__rl": true, "mode": "id", "value": table.id });
    let by_name = |who: &str| json!({ "conditions": [{ "keyName": "name", "condition": "eq", "keyValue": who }] });
    let dry = |name: &str, op: &str, who: &str, set: Value| {
        once(node(
            name,
            "n8n-nodes-base.dataTable",
            1.1,
            json!({ "resource": "row", "operation": op, "dataTableId": id, "matchType": "allConditions",
                    "filters": by_name(who), "columns": { "mappingMode": "defineBelow", "value": set },
                    "options": { "dryRun": true } }),
        ))
    };
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            dry("Update", "update", "Ada", json!({"n": 5})),
            dry("Delete", "deleteRows", "Bob", json!({})),
            dry("Upsert new", "upsert", "Cy", json!({"name": "Cy", "n": 3})),
            dry("Upsert old", "upsert", "Ada", json!({"n": 7})),
        ]))
        .await;
    let (status, doc) = run_manual(&c, &wf, vec![]).await;
    assert_eq!(status, ExecutionStatus::Success, "{doc}");

    let ada = Value::Object(seeded[0].clone());
    let bob = Value::Object(seeded[1].clone());
    let with = |row: &Value, extra: Value| {
        let mut r = row.clone();
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    };
    let update = output(&doc, "Update", 0);
    assert_eq!(update.len(), 2, "{update:?}");
    assert_eq!(update[0], with(&ada, json!({"dryRunState": "before"})));
    let after = &update[1];
    assert!(after["updatedAt"].is_string());
    assert_eq!(
        with(after, json!({"updatedAt": null})),
        with(&ada, json!({"n": 5, "updatedAt": null, "dryRunState": "after"}))
    );
    // key order as n8n's: the row's, `dryRunState` last
    let keys: Vec<String> = after.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["id", "name", "n", "createdAt", "updatedAt", "dryRunState"]);

    let delete = output(&doc, "Delete", 0);
    assert_eq!(
        delete,
        vec![
            with(&bob, json!({"dryRunState": "before"})),
            json!({"id": null, "createdAt": null, "updatedAt": null, "name": null, "n": null, "dryRunState": "after"}),
        ]
    );

    let upsert = output(&doc, "Upsert new", 0);
    assert_eq!(upsert.len(), 2, "{upsert:?}");
    assert_eq!(
        upsert[0],
        json!({"id": null, "createdAt": null, "updatedAt": null, "name": null, "n": null, "dryRunState": "before"})
    );
    let new = &upsert[1];
    assert!(new["createdAt"].is_string() && new["createdAt"] == new["updatedAt"], "{new}");
    assert_eq!(
        with(new, json!({"createdAt": null, "updatedAt": null})),
        json!({"id": 0, "createdAt": null, "updatedAt": null, "name": "Cy", "n": 3, "dryRunState": "after"})
    );
    let old = output(&doc, "Upsert old", 0);
    assert_eq!(old.len(), 2, "{old:?}");
    assert_eq!(old[0], with(&ada, json!({"dryRunState": "before"})));
    assert_eq!((old[1]["n"].clone(), old[1]["dryRunState"].clone()), (json!(7), json!("after")));

    // Nothing was written.
    assert_eq!(table_rows(&c, &table.id).await, vec![ada, bob]);
}

#[tokio::test]
async fn data_table_create_if_not_exists_creates_the_table_once_then_reuses_it() {
    let c = ctx().await;
    let create = |reuse: bool| {
        let options = if reuse { json!({ "createIfNotExists": true }) } else { json!({}) };
        node(
            "Create",
            "n8n-nodes-base.dataTable",
            1.1,
            json!({ "resource": "table", "operation": "create", "tableName": "tasks",
                    "columns": { "column": [{ "name": "title", "type": "string" }, { "name": "done", "type": "boolean" }, { "name": "note" }] },
                    "options": options }),
        )
    };
    let wf = c.workflow(&chain(vec![trigger(), create(true)])).await;
    let (status, doc) = run_manual(&c, &wf, vec![]).await;
    assert_eq!(status, ExecutionStatus::Success, "{doc}");
    let made = output(&doc, "Create", 0);
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0]["name"], json!("tasks"));
    assert_eq!(made[0]["projectId"], json!(c.project.id));
    let columns: Vec<(Value, Value)> = made[0]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].clone(), c["type"].clone()))
        .collect();
    // a column without a type is a string column, n8n's default
    assert_eq!(
        columns,
        [(json!("title"), json!("string")), (json!("done"), json!("boolean")), (json!("note"), json!("string"))]
    );
    let stored = c.data.data_tables.by_name(&c.project.id, "tasks").await.unwrap().unwrap();
    assert_eq!(made[0]["id"], json!(stored.id));

    // Run again: the same table comes back, no second one is made.
    let (status, doc) = run_manual(&c, &wf, vec![]).await;
    assert_eq!(status, ExecutionStatus::Success, "{doc}");
    assert_eq!(output(&doc, "Create", 0), made);
    let all = c.data.data_tables.list_all(&c.project.id).await.unwrap();
    assert_eq!(all.len(), 1);

    // Without the option the name is taken.
    let plain = c.workflow(&chain(vec![trigger(), create(false)])).await;
    let (status, doc) = run_manual(&c, &plain, vec![]).await;
    assert_eq!(status, ExecutionStatus::Error, "{doc}");
    assert!(doc.to_string().contains("already exists"), "{doc}");
}

#[tokio::test]
async fn data_table_table_resource_lists_renames_clears_and_deletes() {
    let c = ctx().await;
    let a = data_table(&c, "alpha", &[("x", "number")]).await;
    data_table(&c, "beta", &[("x", "number")]).await;
    data_table(&c, "Alphabet", &[("x", "number")]).await;
    c.data
        .data_tables
        .insert_rows(&a.id, &[json!({"x": 1}).as_object().unwrap().clone(), json!({"x": 2}).as_object().unwrap().clone()])
        .await
        .unwrap();
    let table = |name: &str, params: Value| {
        let mut p = json!({ "resource": "table" });
        for (k, v) in params.as_object().unwrap() {
            p[k] = v.clone();
        }
        once(node(name, "n8n-nodes-base.dataTable", 1.1, p))
    };
    let by_name = json!({ "__rl": true, "mode": "name", "value": "alpha" });
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            table("List", json!({ "operation": "list", "options": { "filterName": "ALPHA", "sortField": "name", "sortDirection": "desc" } })),
            table("First", json!({ "operation": "list", "returnAll": false, "limit": 1 })),
            table("Clear", json!({ "operation": "clear", "dataTableId": by_name })),
            table("Rename", json!({ "operation": "update", "dataTableId": by_name, "newName": "gamma" })),
            table("Delete", json!({ "operation": "delete", "dataTableId": { "__rl": true, "mode": "id", "value": a.id } })),
        ]))
        .await;
    let (status, doc) = run_manual(&c, &wf, vec![]).await;
    assert_eq!(status, ExecutionStatus::Success, "{doc}");
    let names = |node: &str| -> Vec<Value> { output(&doc, node, 0).iter().map(|t| t["name"].clone()).collect() };
    assert_eq!(names("List"), [json!("Alphabet"), json!("alpha")]);
    assert_eq!(names("First"), [json!("alpha")]);
    assert_eq!(output(&doc, "Clear", 0), vec![json!({"success": true, "deletedCount": 2})]);
    assert_eq!(output(&doc, "Rename", 0), vec![json!({"success": true, "name": "gamma"})]);
    assert_eq!(output(&doc, "Delete", 0), vec![json!({"success": true, "deletedTableId": a.id})]);
    let left: Vec<String> = c.data.data_tables.list_all(&c.project.id).await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(left.len(), 2);
    assert!(left.contains(&"beta".to_owned()) && left.contains(&"Alphabet".to_owned()), "{left:?}");
}

#[tokio::test]
async fn execute_workflow_runs_a_sub_workflow_by_id_from_the_same_project() {
    let c = ctx().await;
    let child = c
        .workflow(&chain(vec![
            node(
                "Start",
                "n8n-nodes-base.executeWorkflowTrigger",
                1.1,
                json!({ "inputSource": "passthrough" }),
            ),
            set("Child", "child", json!("yes")),
        ]))
        .await;
    let call = node(
        "Call",
        "n8n-nodes-base.executeWorkflow",
        1.2,
        json!({ "source": "database", "workflowId": { "__rl": true, "mode": "id", "value": child }, "options": {} }),
    );
    let wf = c
        .workflow(&chain(vec![trigger(), set("Parent", "p", json!(1)), call]))
        .await;
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    let doc = c.run_data(o.execution_id.as_str()).await;
    assert_eq!(
        output(&doc, "Call", 0),
        vec![json!({"p": 1, "child": "yes"})]
    );
    // The child ran as an execution of its own, linked both ways.
    let link = &doc["resultData"]["runData"]["Call"][0]["metadata"];
    assert_eq!(link["subExecution"]["workflowId"], json!(child), "{link}");
    assert_eq!(link["subExecutionsCount"], json!(1), "{link}");
    let child_id = link["subExecution"]["executionId"]
        .as_str()
        .expect("sub-execution id")
        .to_owned();
    assert_ne!(child_id, o.execution_id.as_str());
    let rec = c.data.executions.get(&child_id).await.unwrap().expect("child record");
    assert_eq!(rec.workflow_id, child);
    assert_eq!(rec.mode, ExecutionMode::Integrated);
    assert_eq!(rec.status, ExecutionStatus::Success);
    assert!(rec.started_at.is_some() && rec.stopped_at.is_some());
    let child_doc = c.run_data(&child_id).await;
    assert_eq!(
        child_doc["parentExecution"],
        json!({"executionId": o.execution_id.as_str(), "workflowId": wf})
    );
    assert_eq!(output(&child_doc, "Child", 0), vec![json!({"p": 1, "child": "yes"})]);
    assert_eq!(child_doc["resultData"]["lastNodeExecuted"], json!("Child"));
    // It is listed with the child workflow's executions.
    let listed = c
        .data
        .executions
        .search(&store::data::executions::ExecutionSearch {
            workflow_ids: vec![child.clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        listed.data.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
        vec![child_id]
    );

    // A child that fails: its record says why, the parent's node links to it.
    let failing = c
        .workflow(&chain(vec![
            node(
                "Start",
                "n8n-nodes-base.executeWorkflowTrigger",
                1.1,
                json!({ "inputSource": "passthrough" }),
            ),
            node(
                "Boom",
                "n8n-nodes-base.stopAndError",
                1.0,
                json!({ "errorMessage": "child says no" }),
            ),
        ]))
        .await;
    let call = node(
        "Call",
        "n8n-nodes-base.executeWorkflow",
        1.2,
        json!({ "source": "database", "workflowId": { "__rl": true, "mode": "id", "value": failing }, "options": {} }),
    );
    let parent = c.workflow(&chain(vec![trigger(), call])).await;
    let o = c
        .executor
        .execute_and_wait(manual(&parent), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Error, "{o:?}");
    assert!(o.error.as_deref().unwrap_or("").contains("child says no"), "{o:?}");
    let doc = c.run_data(o.execution_id.as_str()).await;
    let child_id = doc["resultData"]["runData"]["Call"][0]["metadata"]["subExecution"]
        ["executionId"]
        .as_str()
        .expect("the failed call links its child")
        .to_owned();
    let failed = c.executor.outcome(&child_id).await.unwrap();
    assert_eq!(failed.status, ExecutionStatus::Error, "{failed:?}");
    assert!(failed.error.unwrap_or_default().contains("child says no"));

    // A workflow of another project cannot be called.
    let other = ctx().await;
    let foreign = other.workflow(&chain(vec![trigger()])).await;
    let call = node(
        "Call",
        "n8n-nodes-base.executeWorkflow",
        1.2,
        json!({ "source": "database", "workflowId": { "__rl": true, "mode": "id", "value": foreign }, "options": {} }),
    );
    let wf = c.workflow(&chain(vec![trigger(), call])).await;
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Error);
    assert!(o.error.unwrap().contains("does not exist"));
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_is_written() {
    let c = ctx().await;
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            node("X", "n8n-nodes-base.doesNotExist", 1.0, json!({})),
        ]))
        .await;
    let err = c.executor.start_execution(manual(&wf)).await.unwrap_err();
    assert!(err.to_string().contains("doesNotExist"), "{err}");
    let err = c
        .executor
        .start_execution(StartRequest::new(
            WorkflowRef::Published(wf.clone()),
            ExecutionMode::Trigger,
        ))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not published"), "{err}");
    let err = c
        .executor
        .start_execution(manual("no-such-workflow"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, executions::ExecutionError::NotFound(_)),
        "{err}"
    );
    assert!(c.receive(Duration::ZERO).await.is_empty());
    let page = c
        .data
        .executions
        .search(&store::data::executions::ExecutionSearch {
            workflow_ids: vec![wf],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.count, 0);
    // A malformed message is reported failed (kept for the dead-letter queue).
    let failed = c
        .executor
        .handle_queue_batch(vec![executions::QueueRecord {
            message_id: "m1".into(),
            body: Some("{}".into()),
        }])
        .await;
    assert_eq!(failed, vec!["m1".to_owned()]);
}

#[tokio::test]
async fn execute_and_wait_through_the_queue_reports_running_when_the_wait_ends_first() {
    let c = ctx().await;
    let wf = c.workflow(&set_if_workflow()).await;
    // No consumer: the wait ends, the execution is still new (queued).
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_millis(300), Dispatch::Queue)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::New);
    // A consumer picks it up; waiting again sees success.
    let ex = c.executor.clone();
    let batch = c.receive(Duration::from_secs(5)).await;
    tokio::spawn(async move { ex.handle_queue_batch(batch).await });
    let o = c
        .executor
        .wait_for(o.execution_id.as_str(), Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
}

#[tokio::test]
async fn secrets_a_node_echoes_are_scrubbed_from_what_is_stored() {
    let c = ctx().await;
    let cred = secret_credential(&c, "Query key", "httpQueryAuth", "api_key").await;
    // Nothing listens on port 9 of 127.0.0.1: the request fails. The HTTP
    // client's own error names the URL, query key included; the node keeps
    // only its origin, and the scrubber stays behind it as a second line.
    let mut http = node(
        "HTTP",
        "n8n-nodes-base.httpRequest",
        4.2,
        json!({ "url": "http://127.0.0.1:9/x", "authentication": "genericCredentialType", "genericAuthType": "httpQueryAuth", "options": {} }),
    );
    http["credentials"] = json!({ "httpQueryAuth": { "id": cred.id, "name": cred.name } });
    let wf = c.workflow(&chain(vec![trigger(), http])).await;
    let o = c
        .executor
        .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Error, "{o:?}");
    let err = o.error.unwrap();
    assert!(!err.contains(SECRET), "{err}");
    // n8n's message for a refused connection (the URL stays in the node's
    // error description, scrubbed like the rest).
    assert!(err.contains("refused the connection"), "the error says what happened: {err}");
    let stored = c.executor.outcome(o.execution_id.as_str()).await.unwrap();
    assert!(!format!("{stored:?}").contains(SECRET));
    let doc = c.run_data(o.execution_id.as_str()).await.to_string();
    assert!(!doc.contains(SECRET), "{doc}");
}

/// Polls the record until `check` holds (or panics after `secs`).
async fn until(c: &Ctx, id: &str, secs: u64, check: impl Fn(ExecutionStatus, &Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let status = c.data.executions.get(id).await.unwrap().unwrap().status;
        let doc = c
            .data
            .executions
            .get_data(id, &store::data::executions::DataSelection::default())
            .await
            .unwrap()
            .unwrap_or(Value::Null);
        if check(status, &doc) {
            return doc;
        }
        assert!(tokio::time::Instant::now() < deadline, "never held; last {status:?} {doc}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_running_execution_shows_the_nodes_it_ran_so_far() {
    let c = ctx_with(executions::ExecutorSettings {
        inline_wait: Duration::from_secs(10),
        progress_interval: Some(Duration::from_millis(100)),
        ..settings()
    })
    .await;
    // The Wait sleeps 2 s in-process: the execution stays running meanwhile.
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            set("Before", "a", json!(1)),
            wait_secs("Wait", 2),
            set("After", "b", json!(2)),
        ]))
        .await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    let ex = c.executor.clone();
    let run_id = id.clone();
    let run = tokio::spawn(async move { ex.run_execution(run_id.as_str()).await.unwrap() });

    let doc = until(&c, id.as_str(), 10, |status, doc| {
        status == ExecutionStatus::Running && !output(doc, "Before", 0).is_empty()
    })
    .await;
    assert_eq!(output(&doc, "Before", 0), vec![json!({"a": 1})]);
    assert_eq!(output(&doc, "Trigger", 0), vec![json!({})]);
    assert_eq!(doc["resultData"]["lastNodeExecuted"], json!("Before"));
    assert!(doc["resultData"]["runData"].get("After").is_none(), "{doc}");
    // Still running after that read: the progress really came mid-run.
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::Running
    );
    // A read of one node, as get-node-output does it.
    let one = c
        .data
        .executions
        .get_data(
            id.as_str(),
            &store::data::executions::DataSelection {
                node_names: Some(vec!["Before".into()]),
                max_items: Some(1),
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output(&one, "Before", 0), vec![json!({"a": 1})]);

    let RunResult::Ran(o) = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap()
        .unwrap()
    else {
        panic!("not ran")
    };
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    let doc = c.run_data(id.as_str()).await;
    assert_eq!(output(&doc, "After", 0), vec![json!({"a": 1, "b": 2})]);
    assert_eq!(doc["resultData"]["lastNodeExecuted"], json!("After"));
    assert!(doc.get("executionData").is_none());
}

/// Trigger → Code (n items) → Loop (one per batch) ⇄ Body; Loop done → Done.
fn loop_workflow(n: usize) -> Value {
    let code = node(
        "Items",
        "n8n-nodes-base.code",
        2.0,
        json!({ "jsCode": format!("return Array.from({{length: {n}}}, (_, i) => ({{ json: {{ i }} }}));") }),
    );
    let mut wf = chain(vec![
        trigger(),
        code,
        node("Loop", "n8n-nodes-base.splitInBatches", 3.0, json!({ "batchSize": 1, "options": {} })),
    ]);
    let nodes = wf["nodes"].as_array_mut().unwrap();
    nodes.push(node("Body", "n8n-nodes-base.noOp", 1.0, json!({})));
    nodes.push(node("Done", "n8n-nodes-base.noOp", 1.0, json!({})));
    wf["connections"]["Loop"] = json!({ "main": [
        [{ "node": "Done", "type": "main", "index": 0 }],
        [{ "node": "Body", "type": "main", "index": 0 }]
    ] });
    wf["connections"]["Body"] = json!({ "main": [[{ "node": "Loop", "type": "main", "index": 0 }]] });
    wf
}

#[tokio::test]
async fn progress_writes_of_a_long_loop_are_throttled() {
    let env = store::testing::TestEnv::new().await;
    let (dynamo, counter) = store::counting::RequestCounter::instrument(&env.clients.dynamo);
    let clients = store::AwsClients { dynamo, ..env.clients.clone() };
    let data = store::data::InstanceData::new(&clients, &env.config).unwrap();
    let user: protocol::UserId = format!("loop-{}", uuid::Uuid::new_v4().simple()).as_str().into();
    let (_, project) = data.projects.create_user(&user, "l@example.com", None, None).await.unwrap();
    let body = |wf: &Value| store::data::workflows::WorkflowBody {
        nodes: wf["nodes"].clone(),
        connections: wf["connections"].clone(),
        settings: wf["settings"].clone(),
        pin_data: Value::Null,
        meta: Value::Null,
    };
    let wf = data
        .workflows
        .create(
            store::data::workflows::NewWorkflow {
                name: "loop".into(),
                description: None,
                project_id: project.id.clone(),
                folder_id: None,
                body: body(&loop_workflow(300)),
                available_in_mcp: true,
            },
            &user,
        )
        .await
        .unwrap()
        .meta
        .id;
    let url = env.config.queue_url(store::deployment::QueueId::Runs).unwrap().to_owned();
    let every = Duration::from_millis(200);
    // (UpdateItem requests, all requests, run time, node runs) of one run. A
    // long lease: no renewals, so each save is exactly one UpdateItem more.
    let run = |progress: Option<Duration>| {
        let executor = executions::Executor::new(
            data.clone(),
            env.clients.sqs.clone(),
            url.clone(),
            executions::ExecutorSettings {
                lease: Duration::from_secs(120),
                progress_interval: progress,
                ..settings()
            },
        );
        let counter = counter.clone();
        let wf = wf.clone();
        let data = data.clone();
        async move {
            let id = executor.start_execution(manual(&wf)).await.unwrap();
            counter.reset();
            let began = std::time::Instant::now();
            let o = executor.run_execution(id.as_str()).await.unwrap();
            let elapsed = began.elapsed();
            assert!(matches!(&o, RunResult::Ran(o) if o.status == ExecutionStatus::Success), "{o:?}");
            let updates = counter.get("UpdateItem");
            let total = counter.total();
            let doc = data
                .executions
                .get_data(id.as_str(), &store::data::executions::DataSelection::default())
                .await
                .unwrap()
                .unwrap();
            let node_runs: usize = doc["resultData"]["runData"]
                .as_object()
                .unwrap()
                .values()
                .map(|r| r.as_array().map_or(0, Vec::len))
                .sum();
            assert_eq!(doc["resultData"]["runData"]["Loop"].as_array().unwrap().len(), 301);
            assert_eq!(doc["resultData"]["lastNodeExecuted"], json!("Done"));
            (updates, total, elapsed, node_runs)
        }
    };
    let (updates_off, total_off, _, node_runs) = run(None).await;
    let (updates_on, total_on, elapsed, _) = run(Some(every)).await;
    let saves = updates_on - updates_off;
    let bound = (elapsed.as_millis() / every.as_millis()) as u64 + 2;
    println!(
        "{node_runs} node runs in {elapsed:?}: {saves} progress saves every {every:?} at most; \
         DynamoDB requests per execution {total_off} without progress, {total_on} with"
    );
    assert!(node_runs > 600, "{node_runs}");
    assert!(saves >= 1, "progress was stored while running");
    assert!(saves <= bound, "{saves} saves in {elapsed:?} (at most {bound})");
}

fn wait_for_call() -> Value {
    node("Wait", "n8n-nodes-base.wait", 1.1, json!({ "resume": "webhook", "httpMethod": "POST" }))
}

#[tokio::test]
async fn concurrent_resumes_of_a_waiting_execution_resume_it_once_with_the_call() {
    let c = ctx().await;
    let wf = c.workflow(&chain(vec![trigger(), wait_for_call(), set("After", "done", json!("yes"))])).await;
    let o = c.executor.execute_and_wait(manual(&wf), Duration::from_secs(20), Dispatch::Inline).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Waiting, "a call-resumed Wait parks however long it may wait");
    let id = o.execution_id.as_str().to_owned();
    let waiting = c.executor.waiting_on(&id).await.unwrap().expect("waiting on the Wait node");
    assert_eq!(waiting.node.name, "Wait");
    let resumes = (0..6).map(|i| {
        let (exec, id) = (c.executor.clone(), id.clone());
        tokio::spawn(async move {
            let item = engine::Item::new(json!({"body": {"caller": i}}));
            exec.resume_waiting(&id, "Wait", vec![item], None).await.unwrap()
        })
    });
    let results: Vec<_> = futures::future::join_all(resumes).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
    assert!(results.iter().filter(|r| r.is_err()).all(|r| *r == Err(executions::ResumeRefused::NotWaiting)));
    assert!(c.executor.handle_queue_batch(c.receive(Duration::from_secs(5)).await).await.is_empty());
    let doc = c.run_data(&id).await;
    assert_eq!(c.executor.outcome(&id).await.unwrap().status, ExecutionStatus::Success);
    let after = output(&doc, "After", 0);
    assert_eq!(after.len(), 1);
    assert!(after[0]["body"]["caller"].is_number() && after[0]["done"] == "yes", "{after:?}");
    assert!(c.executor.waiting_on(&id).await.unwrap().is_none());
}

#[tokio::test]
async fn a_schedule_tick_runs_once_however_often_it_is_delivered() {
    let c = ctx().await;
    let schedule = node("Schedule", "n8n-nodes-base.scheduleTrigger", 1.2, json!({"rule": {"interval": [{"field": "minutes", "minutesInterval": 5}]}}));
    let wf = c.workflow(&chain(vec![schedule, set("Tick", "t", json!(1))])).await;
    let version = c.data.workflows.publish(&wf, None).await.unwrap();
    let tick = |v: &str| executions::ScheduleTick {
        workflow_id: wf.clone(),
        version_id: v.to_owned(),
        node: "Schedule".into(),
        rule: 0,
        scheduled_time: "2026-12-01T09:30:00Z".into(),
        timezone: "Europe/Berlin".into(),
        offsets: vec![],
        offset: None,
    };
    let runs = (0..5).map(|_| {
        let (exec, t) = (c.executor.clone(), tick(&version));
        tokio::spawn(async move { exec.handle_tick(&t).await.unwrap() })
    });
    let outcomes: Vec<_> = futures::future::join_all(runs).await.into_iter().map(Result::unwrap).collect();
    let started: Vec<_> = outcomes.iter().filter_map(|o| match o { executions::TickOutcome::Started(id) => Some(id.clone()), _ => None }).collect();
    assert_eq!(started.len(), 1, "{outcomes:?}");
    assert!(outcomes.iter().filter(|o| !matches!(o, executions::TickOutcome::Started(_))).all(|o| *o == executions::TickOutcome::Duplicate));
    let doc = c.run_data(started[0].as_str()).await;
    let item = &output(&doc, "Tick", 0)[0];
    assert_eq!((item["Hour"].as_str(), item["Timezone"].as_str(), item["t"].as_i64()), (Some("10"), Some("CET +01:00"), Some(1)));
    let meta = c.data.executions.get(started[0].as_str()).await.unwrap().unwrap();
    assert_eq!(meta.mode, ExecutionMode::Trigger);
    assert_eq!(c.executor.handle_tick(&tick("an-older-version")).await.unwrap(), executions::TickOutcome::Stale);
}

#[tokio::test]
async fn finished_executions_expire_whole_and_waiting_ones_do_not() {
    let c = ctx_with(executions::ExecutorSettings { retention_secs: Some(3600), ..settings() }).await;
    let wf = c.workflow(&chain(vec![trigger(), wait_for_call(), set("After", "done", json!("yes"))])).await;
    let o = c.executor.execute_and_wait(manual(&wf), Duration::from_secs(20), Dispatch::Inline).await.unwrap();
    let id = o.execution_id.as_str().to_owned();
    let items = |id: String| {
        let table = c.data.executions.table().clone();
        async move { table.query_prefix(&format!("exec#{id}"), "", false).await.unwrap() }
    };
    let expiry = |item: &store::data::db::Item| match item.get("expiresAt") {
        Some(aws_sdk_dynamodb::types::AttributeValue::N(n)) => n.parse::<u64>().ok(),
        _ => None,
    };
    let sk = |item: &store::data::db::Item| store::data::db::get_s(item, "sk").unwrap_or_default().to_owned();
    for item in items(id.clone()).await.iter().filter(|i| sk(i) == "meta" || sk(i).starts_with("data#")) {
        assert_eq!(expiry(item), None, "waiting: {} has no expiry", sk(item));
    }
    assert!(c.executor.resume_waiting(&id, "Wait", vec![engine::Item::new(json!({}))], None).await.unwrap().is_ok());
    assert!(c.executor.handle_queue_batch(c.receive(Duration::from_secs(5)).await).await.is_empty());
    assert_eq!(c.executor.outcome(&id).await.unwrap().status, ExecutionStatus::Success);
    let now = store::data::db::now_secs();
    let stored = items(id.clone()).await;
    let kept: Vec<&store::data::db::Item> = stored.iter().filter(|i| sk(i) == "meta" || sk(i).starts_with("data#")).collect();
    assert!(kept.len() >= 2);
    for item in kept {
        let t = expiry(item).unwrap_or_else(|| panic!("{} expires", sk(item)));
        assert!((now + 3500..=now + 3700).contains(&t), "{}: {t}", sk(item));
    }
}

#[tokio::test]
async fn remove_duplicates_remembers_values_across_executions() {
    let c = ctx().await;
    let items = node(
        "Items",
        "n8n-nodes-base.code",
        2.0,
        json!({ "jsCode": "return [{ json: { id: 1 } }, { json: { id: 2 } }, { json: { id: 1 } }];" }),
    );
    let dedupe = node(
        "Dedupe",
        "n8n-nodes-base.removeDuplicates",
        2.0,
        json!({ "operation": "removeItemsSeenInPreviousExecutions", "dedupeValue": "={{ $json.id }}" }),
    );
    let wf = c.workflow(&chain(vec![trigger(), items, dedupe])).await;
    let run = || async {
        let o = c
            .executor
            .execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline)
            .await
            .unwrap();
        assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
        let doc = c.run_data(o.execution_id.as_str()).await;
        (output(&doc, "Dedupe", 0), output(&doc, "Dedupe", 1))
    };
    // First run: all new; as in n8n, repeats within one run stay, grouped by value.
    let (kept, discarded) = run().await;
    assert_eq!(kept, vec![json!({"id": 1}), json!({"id": 1}), json!({"id": 2})]);
    assert!(discarded.is_empty(), "{discarded:?}");
    // Second run: everything was seen before.
    let (kept, discarded) = run().await;
    assert!(kept.is_empty(), "{kept:?}");
    assert_eq!(discarded.len(), 3);
    // The node's own record (scope "node" by default).
    let stored = c.data.processed_data.load(&wf, "n:Dedupe").await.unwrap();
    assert!(stored.is_some_and(|(_, version)| version == 1), "one write: the second run added nothing");
}

/// Issue 19's first workflow as n8n exports it (Schedule → HTTP GET weather
/// → Set → Slack post message), published and fired by a schedule tick: the
/// executor decrypts the Slack credential and the stand-ins for Open-Meteo
/// and Slack's Web API (their origins sent there) see the requests.
#[tokio::test]
async fn a_scheduled_weather_to_slack_workflow_posts_the_message() {
    type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
        let log = log.clone();
        async move {
            let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            log.lock().unwrap().push((uri.to_string(), auth.clone(), body.clone()));
            axum::Json(match uri.path() {
                "/v1/forecast" => json!({"latitude": 52.52, "longitude": 13.419998, "current_units": {"temperature_2m": "°C"}, "current": {"time": "2026-12-01T10:05", "temperature_2m": 3.4, "wind_speed_10m": 11.2}}),
                "/api/chat.postMessage" if auth == "Bearer xoxb-e2e-secret" => json!({"ok": true, "channel": body["channel"], "ts": "1796205900.000200", "message": {"type": "message", "text": body["text"], "ts": "1796205900.000200"}}),
                _ => json!({"ok": false, "error": "invalid_auth"}),
            })
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let origins = [("https://api.open-meteo.com".to_owned(), base.clone()), ("https://slack.com".to_owned(), base)].into();
    let c = ctx_with(executions::ExecutorSettings { origin_overrides: origins, ..settings() }).await;
    let cred = c
        .data
        .credentials
        .create(store::data::credentials::NewCredential {
            name: "Slack account".into(),
            kind: "slackApi".into(),
            description: None,
            project_id: c.project.id.clone(),
            is_managed: false,
            is_global: false,
            secret: store::data::credentials::SecretData::new(json!({"accessToken": "xoxb-e2e-secret"})),
        })
        .await
        .unwrap();
    let wf: Value = serde_json::from_str(&r#"{
      "name": "Weather to Slack",
      "nodes": [
        {"parameters": {"rule": {"interval": [{"field": "hours", "triggerAtMinute": 5}]}}, "id": "3f1c2a9e-0b7d-4c55-9a61-1d2e3f4a5b6c", "name": "Schedule Trigger", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2, "position": [0, 0]},
        {"parameters": {"url": "https://api.open-meteo.com/v1/forecast", "sendQuery": true, "queryParameters": {"parameters": [{"name": "latitude", "value": "52.52"}, {"name": "longitude", "value": "13.41"}, {"name": "current", "value": "temperature_2m,wind_speed_10m"}]}, "options": {}}, "id": "8a0e4c1b-2d3f-4e5a-8b6c-7d8e9f0a1b2c", "name": "Get Weather", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [220, 0]},
        {"parameters": {"assignments": {"assignments": [{"id": "b1f2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "name": "summary", "value": "=Berlin at {{ $('Schedule Trigger').item.json.Hour }}:05: {{ $json.current.temperature_2m }} °C, wind {{ $json.current.wind_speed_10m }} km/h", "type": "string"}]}, "options": {}}, "id": "c2d3e4f5-a6b7-4c8d-9e0f-1a2b3c4d5e6f", "name": "Summarize", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [440, 0]},
        {"parameters": {"select": "channel", "channelId": {"__rl": true, "value": "C05WEATHER", "mode": "list", "cachedResultName": "weather"}, "text": "={{ $json.summary }}", "otherOptions": {"includeLinkToWorkflow": false}}, "id": "d3e4f5a6-b7c8-4d9e-8f0a-2b3c4d5e6f7a", "name": "Post to Slack", "type": "n8n-nodes-base.slack", "typeVersion": 2.3, "position": [660, 0], "webhookId": "e4f5a6b7-c8d9-4e0f-9a1b-3c4d5e6f7a8b", "credentials": {"slackApi": {"id": "CRED_ID", "name": "Slack account"}}}
      ],
      "connections": {
        "Schedule Trigger": {"main": [[{"node": "Get Weather", "type": "main", "index": 0}]]},
        "Get Weather": {"main": [[{"node": "Summarize", "type": "main", "index": 0}]]},
        "Summarize": {"main": [[{"node": "Post to Slack", "type": "main", "index": 0}]]}
      },
      "settings": {"executionOrder": "v1"}
    }"#.replace("CRED_ID", &cred.id))
    .unwrap();
    let id = c.workflow(&wf).await;
    let version = c.data.workflows.publish(&id, None).await.unwrap();
    let tick = executions::ScheduleTick {
        workflow_id: id.clone(),
        version_id: version,
        node: "Schedule Trigger".into(),
        rule: 0,
        scheduled_time: "2026-12-01T09:05:00Z".into(),
        timezone: "Europe/Berlin".into(),
        offsets: vec![],
        offset: None,
    };
    let executions::TickOutcome::Started(exec) = c.executor.handle_tick(&tick).await.unwrap() else { panic!("the tick started no execution") };
    let o = c.executor.outcome(exec.as_str()).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");

    let text = "Berlin at 10:05: 3.4 °C, wind 11.2 km/h";
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, "/v1/forecast?latitude=52.52&longitude=13.41&current=temperature_2m%2Cwind_speed_10m");
    assert_eq!((seen[1].0.as_str(), seen[1].1.as_str()), ("/api/chat.postMessage", "Bearer xoxb-e2e-secret"));
    assert_eq!(seen[1].2, json!({"channel": "C05WEATHER", "text": text}));
    let doc = c.run_data(exec.as_str()).await;
    assert_eq!(output(&doc, "Post to Slack", 0), vec![json!({"ok": true, "channel": "C05WEATHER", "message": {"type": "message", "text": text, "ts": "1796205900.000200"}, "message_timestamp": "1796205900.000200"})]);
    assert!(!doc.to_string().contains("xoxb-e2e-secret"), "run data holds no token");
}

/// `{"a": {"a": … {"end": true}}}`, `depth` objects deep.
fn nested(depth: usize) -> Value {
    let mut v = json!({ "end": true });
    for _ in 1..depth {
        v = json!({ "a": v });
    }
    v
}

#[tokio::test]
async fn an_item_nested_200_deep_is_stored_readable_and_resumes_a_wait() {
    let c = ctx().await;
    // serde_json's parser refuses the 128th level; the Code node accepts 256.
    let code = node(
        "Deep",
        "n8n-nodes-base.code",
        2.0,
        json!({ "jsCode": "let o = { end: true }; for (let i = 1; i < 200; i++) o = { a: o }; return [{ json: { deep: o } }];" }),
    );
    let wf = c.workflow(&chain(vec![trigger(), code, wait_for_call(), set("After", "done", json!("yes"))])).await;
    let o = c.executor.execute_and_wait(manual(&wf), Duration::from_secs(20), Dispatch::Inline).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Waiting, "{o:?}");
    let id = o.execution_id.as_str().to_owned();
    let doc = c.run_data(&id).await;
    assert!(output(&doc, "Deep", 0) == vec![json!({ "deep": nested(200) })], "the run data reads back");
    assert!(c.executor.waiting_on(&id).await.unwrap().is_some(), "the parked state reads back");
    let item = engine::Item::new(json!({ "body": { "caller": 1 } }));
    assert!(c.executor.resume_waiting(&id, "Wait", vec![item], None).await.unwrap().is_ok());
    assert!(c.executor.handle_queue_batch(c.receive(Duration::from_secs(5)).await).await.is_empty());
    assert_eq!(c.executor.outcome(&id).await.unwrap().status, ExecutionStatus::Success);
    let doc = c.run_data(&id).await;
    assert!(output(&doc, "Deep", 0) == vec![json!({ "deep": nested(200) })]);
    assert_eq!(output(&doc, "After", 0), vec![json!({ "body": { "caller": 1 }, "done": "yes" })]);
}

#[tokio::test]
async fn data_too_deep_to_store_fails_the_execution_clearly() {
    let c = ctx().await;
    // A dotted field name nests as deep as it is long.
    let wf = c.workflow(&chain(vec![trigger(), set("Deep", &format!("{}end", "a.".repeat(600)), json!("x"))])).await;
    let o = c.executor.execute_and_wait(manual(&wf), Duration::from_secs(20), Dispatch::Inline).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Error, "{o:?}");
    let err = o.error.unwrap_or_default();
    assert!(err.contains("nested too deeply to store (more than 512 levels)"), "{err}");
}

/// The sandbox's work for functions that link none (workflow code, the
/// expressions' syntax, parameters resolved against a past run) goes over
/// the Runs queue and comes back from the executor's answer.
#[tokio::test]
async fn sandbox_jobs_go_through_the_queue_and_come_back() {
    let c = Arc::new(ctx().await);
    // a consumer: the executor's side of the queue
    let consumer = {
        let c = c.clone();
        tokio::spawn(async move {
            loop {
                let batch = c.receive(Duration::from_secs(2)).await;
                if !batch.is_empty() {
                    c.executor.handle_queue_batch(batch).await;
                }
            }
        })
    };
    // workflow code: the script's workflow, and its expressions' verdicts, from one job
    let script = r#"return [{ json: { workflow: JSON.stringify({ nodes: [
        { name: "A", parameters: { v: "={{ [1, 2].map(x => x * 10).join() }}", bad: "={{ $json.a + }}", again: "={{ $json.a + }}" } },
        { name: "B", parameters: { nested: { list: ["={{ $json.ok }}", "plain"] } } },
    ], connections: {} }) } }];"#;
    let compiled = c.executor.compile_workflow(script.into(), Dispatch::Queue).await.unwrap().unwrap();
    assert_eq!(compiled.workflow["nodes"][1]["parameters"]["nested"]["list"][1], "plain");
    assert_eq!(compiled.syntax_errors.keys().collect::<Vec<_>>(), ["={{ $json.a + }}"], "{compiled:?}");
    let failed = c.executor.compile_workflow("while (true) {}".into(), Dispatch::Queue).await.unwrap();
    assert!(failed.as_ref().is_err_and(|e| e.contains("ran longer than")), "{failed:?}");
    let nothing = c.executor.compile_workflow("return [{ json: { other: 1 } }];".into(), Dispatch::Queue).await.unwrap();
    assert_eq!(nothing, Err("the code did not produce a workflow".to_owned()));

    let errors = c.executor.syntax_errors(vec!["={{ $json.a + 1 }}".into(), "={{ $json.a + }}".into(), "plain".into()], Dispatch::Queue).await.unwrap();
    assert_eq!(errors.len(), 3);
    assert!(errors[0].is_none() && errors[2].is_none(), "{errors:?}");
    assert!(errors[1].is_some(), "{errors:?}");

    // a past run: the Set node's expressions resolved against its input
    let wf = c.workflow(&chain(vec![trigger(), set("Answer", "n", json!("={{ 6 * 7 }}")), set("Gap", "m", json!("={{ $json.missing }}"))])).await;
    let o = c.executor.execute_and_wait(manual(&wf), Duration::from_secs(30), Dispatch::Inline).await.unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    let answer = c.executor.resolve_parameters(o.execution_id.as_str(), "Answer", 0, None, Dispatch::Queue).await.unwrap().unwrap();
    assert!(answer.resolved.to_string().contains("42") && answer.failed_expressions.is_empty(), "{answer:?}");
    let gap = c.executor.resolve_parameters(o.execution_id.as_str(), "Gap", 0, None, Dispatch::Queue).await.unwrap().unwrap();
    assert_eq!(gap.empty_resolutions.first().map(|e| e.expression.as_str()), Some("={{ $json.missing }}"), "{gap:?}");
    let missing = c.executor.resolve_parameters("no-such-execution", "Answer", 0, None, Dispatch::Queue).await.unwrap_err();
    assert!(missing.to_string().contains("not found"), "{missing}");

    // a body no queue message holds is refused before it is sent
    let huge = format!("return [{{ json: {{ s: '{}' }} }}];", "x".repeat(300 * 1024));
    let e = c.executor.compile_workflow(huge, Dispatch::Queue).await.unwrap_err();
    assert!(e.to_string().contains("too large"), "{e}");
    consumer.abort();
}
