//! The agent's `data-tables` and `workspace` tools end to end through HTTP +
//! SSE with the scripted model (its script built here, so it can carry
//! 1,200 rows and the ids of things made through MCP): a table created,
//! filled in batches of 100 under one session grant, queried with `ilike`
//! (and `like`, which matches case), updated, and rows deleted only after an
//! approval whose card shows the spec's preview; folders and tags made,
//! moved, cleaned up and deleted, as MCP then sees them; strangers refused
//! before anyone is asked.

mod agent_common;

use agent::model::scripted::ScriptedProvider;
use agent::model::{CancellationToken, ModelProvider, ModelRequest, ModelStream};
use agent_common::*;
use protocol::events::EventType;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// A run segment here can be a dozen model turns over 1,200 rows (moto
/// serialises DynamoDB requests); waiting ends as soon as the segment does.
const RUN_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// One tool call of a run and how it settled.
#[derive(Debug)]
struct Call {
    name: String,
    args: Value,
    outcome: Result<Value, String>,
}

/// The tool calls in the order the model made them, with their outcomes.
fn calls(frames: &[Frame]) -> Vec<Call> {
    find(frames, EventType::ToolCall)
        .into_iter()
        .filter_map(|c| {
            let c = payload(c);
            let id = c["toolCallId"].clone();
            let settled = frames
                .iter()
                .filter(|f| matches!(f.kind(), EventType::ToolResult | EventType::ToolError))
                .map(payload)
                .find(|p| p["toolCallId"] == id)?;
            let outcome = match settled.get("result") {
                Some(r) => Ok(r.clone()),
                None => Err(settled["error"].as_str().unwrap_or_default().to_owned()),
            };
            Some(Call { name: c["toolName"].as_str().unwrap_or_default().to_owned(), args: c["args"].clone(), outcome })
        })
        .collect()
}

fn ok(c: &Call) -> &Value {
    c.outcome.as_ref().unwrap_or_else(|e| panic!("{} {} failed: {e}", c.name, c.args["action"]))
}

/// The rows inside a query result's `<untrusted_data>` envelope.
fn enveloped_rows(result: &Value) -> Vec<Value> {
    let t = result["data"].as_str().expect("rows come as an envelope string");
    assert!(t.starts_with("<untrusted_data source=\"data-table:"), "row data is enveloped: {t}");
    let body = t.split_once('\n').unwrap().1.rsplit_once('\n').unwrap().0;
    serde_json::from_str::<Vec<Value>>(body).unwrap()
}

fn from_result(turn: usize, pointer: &str) -> Value {
    json!({"$fromResult": {"turn": turn, "call": 0, "pointer": pointer}})
}

fn tool(name: &str, args: Value) -> Value {
    json!({"name": name, "args": args})
}

fn turn(calls: Vec<Value>) -> Value {
    json!({"toolCalls": calls})
}

/// The scripted model, with a script the test can replace between runs
/// (a later conversation can then name ids made in an earlier one).
struct Rescriptable(Mutex<Arc<ScriptedProvider>>);

impl Rescriptable {
    /// Plays `conversations` (message → turns) from now on.
    fn play(&self, conversations: &Value) {
        let script = json!({"conversations": conversations}).to_string();
        *self.0.lock().unwrap() = Arc::new(ScriptedProvider::from_json(&script).expect("script"));
    }
}

impl ModelProvider for Rescriptable {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "inline"
    }
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let current = self.0.lock().unwrap().clone();
        current.stream(request, cancel)
    }
}

/// A cloud whose model plays `conversations`, and the handle to change them.
async fn cloud_playing(conversations: &Value) -> (Cloud, Arc<Rescriptable>) {
    let model = Arc::new(Rescriptable(Mutex::new(Arc::new(ScriptedProvider::from_json("{\"conversations\": {}}").unwrap()))));
    model.play(conversations);
    // The real domain tools (no stand-ins): `workflows(list)` reads what `workspace` changed.
    let cloud = cloud_with(Setup { stubs: false, ..Setup::default() }, |c| (c.clone(), ()), Some(model.clone() as Arc<dyn ModelProvider>)).await.0;
    (cloud, model)
}

impl Cloud {
    /// Sends a chat message and reads its run to the end or to a confirmation request.
    async fn run(&self, feed: &mut Feed, key: &str, thread: &str, message: &str) -> Vec<Frame> {
        let (status, body) = self.chat(key, thread, message).await;
        assert_eq!(status, 200, "{body}");
        feed.until(RUN_WAIT, |f| matches!(f.kind(), EventType::RunFinish | EventType::ConfirmationRequest)).await
    }

    /// Answers the pending confirmation with `decision`; reads on to the
    /// next confirmation request or the end.
    async fn decide(&self, feed: &mut Feed, frames: &[Frame], decision: Value) -> Vec<Frame> {
        let (status, body) = self.confirm(ALICE, &request_id(frames), decision).await;
        assert_eq!(status, 200, "{body}");
        feed.until(RUN_WAIT, |f| matches!(f.kind(), EventType::RunFinish | EventType::ConfirmationRequest)).await
    }

    /// Calls an MCP tool; `Ok(structuredContent)` or `Err(text)` for a tool error.
    async fn mcp(&self, key: &str, tool: &str, args: Value) -> Result<Value, String> {
        let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let (status, body) = self.post(key, "/mcp", rpc).await;
        assert_eq!(status, 200, "{body}");
        let r = &body["result"];
        if r["isError"] == true {
            Err(r["content"][0]["text"].as_str().unwrap_or_default().to_owned())
        } else {
            Ok(r["structuredContent"].clone())
        }
    }
}

/// The confirmation request that ends `frames`.
fn card(frames: &[Frame]) -> Value {
    let last = frames.last().expect("frames");
    assert_eq!(last.kind(), EventType::ConfirmationRequest, "expected a card, got {:?}", kinds(frames));
    payload(last)
}

fn finished(frames: &[Frame]) {
    let last = frames.last().unwrap();
    assert_eq!(last.kind(), EventType::RunFinish, "{:?}", kinds(frames));
    assert_eq!(payload(last)["status"], "completed", "{:?}", kinds(frames));
}

const ROWS: usize = 1200;
const BATCH: usize = 100;
const LONG_NOTE: usize = 150;

/// Lead `i`: every third one at Acme (with its domain capitalised, so only
/// a case-insensitive match finds it), score `i % 100`, a long note.
fn lead(i: usize) -> Value {
    let domain = if i % 3 == 0 { "Acme.io" } else { "example.com" };
    json!({
        "email": format!("lead{i}@{domain}"),
        "notes": format!("{i:04}{}", "n".repeat(LONG_NOTE - 4)),
        "name": format!("Lead {i}"),
        "company": if i % 3 == 0 { "Acme" } else { "Other" },
        "score": i % 100,
        "status": "new",
    })
}

fn is_acme(i: usize) -> bool {
    i % 3 == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_table_is_filled_in_batches_queried_updated_and_pruned_only_after_approval() {
    let table = from_result(0, "/table/id");
    let on_table = |extra: Value| {
        let mut args = json!({"dataTableId": table, "dataTableName": "Leads"});
        args.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        args
    };
    let mut turns = vec![turn(vec![tool("data-tables", json!({"action": "create", "name": "Leads", "columns": [
        {"name": "email", "type": "string"}, {"name": "notes", "type": "string"}, {"name": "name", "type": "string"},
        {"name": "company", "type": "string"}, {"name": "score", "type": "number"}, {"name": "status", "type": "string"}
    ]}))])];
    for batch in 0..ROWS / BATCH {
        let rows: Vec<Value> = (batch * BATCH..(batch + 1) * BATCH).map(lead).collect();
        turns.push(turn(vec![tool("data-tables", on_table(json!({"action": "insert-rows", "rows": rows})))]));
    }
    let acme = json!({"columnName": "email", "condition": "ilike", "value": "ACME"});
    turns.push(turn(vec![
        tool("data-tables", on_table(json!({"action": "query", "filter": {"type": "and", "filters": [acme]}, "limit": 5}))),
        tool("data-tables", on_table(json!({"action": "query", "filter": {"type": "and", "filters": [{"columnName": "email", "condition": "like", "value": "ACME"}]}, "limit": 5}))),
        tool("data-tables", on_table(json!({"action": "schema"}))),
    ]));
    turns.push(turn(vec![tool("data-tables", on_table(json!({"action": "update-rows",
        "filter": {"type": "and", "filters": [acme, {"columnName": "status", "condition": "eq", "value": "new"}]},
        "data": {"status": "qualified"}})))]));
    turns.push(turn(vec![tool("data-tables", on_table(json!({"action": "delete-rows",
        "filter": {"type": "and", "filters": [{"columnName": "status", "condition": "eq", "value": "qualified"}, {"columnName": "score", "condition": "lt", "value": 50}]}})))]));
    turns.push(turn(vec![tool("data-tables", on_table(json!({"action": "query", "limit": 1})))]));
    turns.push(json!({"text": "The Leads table is ready."}));
    let mut script = json!({"Build the leads table": turns});
    let (cloud, model) = cloud_playing(&script).await;
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;

    // Create: asks, naming the table and its columns.
    let frames = cloud.run(&mut feed, ALICE, &t, "Build the leads table").await;
    let c = card(&frames);
    assert_eq!((c["toolName"].as_str(), c["severity"].as_str(), c["resourceName"].as_str()), (Some("data-tables"), Some("info"), Some("Leads")));
    assert!(c["message"].as_str().unwrap().starts_with("Create the table with 6 columns: \"email\", \"notes\""), "{c}");
    assert_eq!(c["approvalDetails"]["action"], "create-table");
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": true})).await;

    // The first batch asks, with the spec's preview: 3 rows × 5 columns, 100 characters per value.
    let c = card(&frames);
    assert_eq!(c["resourceName"], "Leads");
    let d = &c["approvalDetails"];
    assert_eq!((d["action"].as_str(), d["count"].as_u64(), d["remainingRows"].as_u64()), (Some("insert-rows"), Some(100), Some(97)));
    let shown = d["rows"].as_array().unwrap();
    assert_eq!(shown.len(), 3);
    for (i, r) in shown.iter().enumerate() {
        assert_eq!(r["remainingColumns"], 1, "the sixth column is counted, not shown");
        let values = r["values"].as_array().unwrap();
        let columns: Vec<&str> = values.iter().map(|v| v["column"].as_str().unwrap()).collect();
        assert_eq!(columns, ["email", "notes", "name", "company", "score"]);
        assert_eq!(values[0]["value"], json!(format!("\"{}\"", lead(i)["email"].as_str().unwrap())), "JSON-formatted, quotes included");
        let note = values[1]["value"].as_str().unwrap();
        assert_eq!(note.chars().count(), 101, "cut to 100 characters and an ellipsis: {note}");
        assert!(note.starts_with(&format!("\"{i:04}")) && note.ends_with('…'));
        assert_eq!(values[4]["value"], json!(i.to_string()));
    }
    let message = c["message"].as_str().unwrap();
    assert!(message.starts_with("Add 100 rows\n\nRow 1: set \"email\" to \"lead0@Acme.io\""), "{message}");
    assert!(message.contains("1 more column") && message.ends_with("97 more rows"), "{message}");

    // "Always allow" for this thread: the other eleven batches run without asking.
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": true, "scope": "session"})).await;
    let run = calls(&feed.seen);
    let inserts: Vec<&Call> = run.iter().filter(|c| c.args["action"] == "insert-rows").collect();
    assert_eq!(inserts.len(), ROWS / BATCH);
    assert!(inserts.iter().all(|c| ok(c)["insertedCount"] == BATCH), "every batch of 100 inserted");
    let table_id = ok(&run[0])["table"]["id"].as_str().unwrap().to_owned();
    assert!(inserts.iter().all(|c| c.args["dataTableId"] == table_id.as_str()), "each batch chained on the created table's id");
    let asked: Vec<Value> =
        find(&feed.seen, EventType::ConfirmationRequest).into_iter().map(|f| payload(f)["approvalDetails"]["action"].clone()).collect();
    assert_eq!(asked, ["create-table", "insert-rows", "update-rows"], "the grant covered the other eleven batches");

    // Queries: ilike is a case-insensitive contains, like matches case; rows are enveloped.
    let queries: Vec<&Call> = run.iter().filter(|c| c.args["action"] == "query").collect();
    let acme_count = (0..ROWS).filter(|i| is_acme(*i)).count();
    let ilike = ok(queries[0]);
    assert_eq!((ilike["count"].as_u64(), ilike["returned"].as_u64()), (Some(acme_count as u64), Some(5)));
    let rows = enveloped_rows(ilike);
    assert!(rows.iter().all(|r| r["email"].as_str().unwrap().ends_with("@Acme.io")), "{rows:?}");
    assert_eq!(rows[0]["notes"].as_str().unwrap().len(), LONG_NOTE, "short enough to come back whole");
    assert!(ilike["hint"].as_str().unwrap().contains(&format!("{} more matching rows", acme_count - 5)));
    assert_eq!(ok(queries[1])["count"], 0, "like matches case");
    let schema = ok(run.iter().find(|c| c.args["action"] == "schema").unwrap());
    let names: Vec<&str> = schema["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["email", "notes", "name", "company", "score", "status"]);

    // Update: asks with the changes and the filter in words.
    let c = card(&frames);
    assert_eq!(c["approvalDetails"]["action"], "update-rows");
    assert_eq!(c["message"], "Set \"status\" to \"qualified\" in rows where \"email\" contains \"ACME\" (ignoring case) and \"status\" is \"new\"");
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": true})).await;
    let update = calls(&feed.seen).into_iter().find(|c| c.args["action"] == "update-rows").unwrap();
    assert_eq!(ok(&update)["updatedCount"], acme_count);

    // Delete: destructive, the filter in words — and nothing is gone before the approval.
    let c = card(&frames);
    assert_eq!((c["severity"].as_str(), c["resourceName"].as_str()), (Some("destructive"), Some("Leads")));
    assert_eq!(c["message"], "Delete rows where \"status\" is \"qualified\" and \"score\" is less than 50");
    assert_eq!(c["approvalDetails"]["action"], "delete-rows");
    assert_eq!(c["approvalDetails"]["filter"]["filters"][1], json!({"columnName": "score", "condition": "lt", "value": 50}));
    let doomed = (0..ROWS).filter(|i| is_acme(*i) && i % 100 < 50).count();
    let data = store::data::InstanceData::new(&cloud.running.app.clients, &cloud.running.app.config).unwrap();
    assert_eq!(data.data_tables.count_rows(&table_id).await.unwrap(), ROWS, "nothing deleted while the card waits");
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": true})).await;
    finished(&frames);
    let run = calls(&feed.seen);
    let delete = run.iter().find(|c| c.args["action"] == "delete-rows").unwrap();
    assert_eq!(ok(delete)["deletedCount"], doomed);
    let after = run.iter().filter(|c| c.args["action"] == "query").last().unwrap();
    assert_eq!(ok(after)["count"], ROWS - doomed, "the count after the delete");

    // MCP sees the same table.
    let found = cloud.mcp(ALICE, "search_data_tables", json!({"query": "LEADS"})).await.unwrap();
    assert_eq!(found["data"][0]["id"], table_id.as_str());
    assert_eq!(found["data"][0]["columns"].as_array().unwrap().len(), 6);

    // A stranger naming alice's table, by id or by name, is refused before anyone is asked.
    let stranger = "Delete the leads table";
    script[stranger] = json!([
        turn(vec![tool("data-tables", json!({"action": "delete", "dataTableId": table_id, "dataTableName": "Leads"}))]),
        turn(vec![tool("data-tables", json!({"action": "delete-rows", "dataTableId": "Leads", "filter": {"filters": [{"columnName": "score", "condition": "gte", "value": 0}]}}))]),
        {"text": "I could not find it."}
    ]);
    model.play(&script);
    let bobs = thread();
    let mut bob_feed = cloud.sse_events(BOB, &bobs).await;
    finished(&cloud.run(&mut bob_feed, BOB, &bobs, stranger).await);
    let refused = calls(&bob_feed.seen);
    assert_eq!(refused.len(), 2);
    for c in &refused {
        assert!(c.outcome.as_ref().is_err_and(|e| e.contains("not found")), "{:?}", c.outcome);
    }
    assert!(find(&bob_feed.seen, EventType::ConfirmationRequest).is_empty());
    assert_eq!(cloud.mcp(BOB, "search_data_tables", json!({"query": "leads"})).await.unwrap()["count"], 0);
    assert_eq!(cloud.mcp(ALICE, "search_data_tables", json!({"query": "leads"})).await.unwrap()["count"], 1, "still there");
    cloud.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn folders_and_tags_round_trip_and_show_up_in_mcp() {
    let (cloud, model) = cloud_playing(&json!({})).await;
    // A workflow made through MCP, and two test runs of it.
    let code = "export default workflow('weekly', 'Weekly report').add(trigger({ type: 'n8n-nodes-base.manualTrigger', version: 1, config: { name: 'Start' } }));";
    let wf = cloud.mcp(ALICE, "create_workflow_from_code", json!({"code": code})).await.expect("created through MCP")["workflowId"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..2 {
        cloud.mcp(ALICE, "test_workflow", json!({"workflowId": wf, "pinData": {}})).await.expect("a test run");
    }
    assert_eq!(cloud.mcp(ALICE, "search_executions", json!({"workflowId": wf})).await.unwrap()["count"], 2);

    let organize = "Organize my workflows";
    let mut script = json!({organize: [
        turn(vec![tool("workspace", json!({"action": "list-projects"}))]),
        turn(vec![tool("workspace", json!({"action": "create-folder", "name": "Clients"}))]),
        turn(vec![tool("workspace", json!({"action": "create-folder", "name": "Acme", "parentFolderId": from_result(1, "/id")}))]),
        turn(vec![tool("workspace", json!({"action": "move-workflow-to-folder", "workflowId": wf, "folderId": from_result(2, "/id")}))]),
        turn(vec![tool("workspace", json!({"action": "tag-workflow", "workflowId": wf, "tags": ["Sales", "Q3"]}))]),
        turn(vec![tool("workspace", json!({"action": "list-folders"})), tool("workspace", json!({"action": "list-tags"}))]),
        turn(vec![tool("workspace", json!({"action": "cleanup-test-executions", "workflowId": wf, "workflowName": "Weekly report", "olderThanHours": 0}))]),
        turn(vec![tool("workflows", json!({"action": "list", "folderPath": "Clients/Acme"})), tool("workflows", json!({"action": "list", "folderPath": "Clients", "recursive": false}))]),
        {"text": "Organized."}
    ]});
    model.play(&script);
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;

    let frames = cloud.run(&mut feed, ALICE, &t, organize).await;
    let c = card(&frames);
    assert_eq!((c["toolName"].as_str(), c["resourceName"].as_str(), c["severity"].as_str()), (Some("workspace"), Some("Clients"), Some("info")));
    assert!(c["message"].as_str().unwrap().starts_with("Create folder \"Clients\" in project "), "{c}");
    // Always allow folder creation for this thread: the subfolder does not ask.
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": true, "scope": "session"})).await;
    let c = card(&frames);
    assert_eq!(c["message"], "Move workflow \"Weekly report\" to folder \"Clients/Acme\"");
    assert_eq!(c["approvalDetails"]["folder"]["path"], "Clients/Acme");
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": true})).await;
    let c = card(&frames);
    assert_eq!(c["message"], "Tag workflow \"Weekly report\" with [Sales, Q3]");
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": true})).await;
    let c = card(&frames);
    assert_eq!((c["severity"].as_str(), c["approvalDetails"]["olderThanHours"].as_f64()), (Some("warning"), Some(0.0)));
    assert!(c["message"].as_str().unwrap().contains("production executions are kept"));
    finished(&cloud.decide(&mut feed, &frames, json!({"approved": true})).await);

    let run = calls(&feed.seen);
    let projects = ok(&run[0])["projects"].as_array().unwrap().clone();
    assert_eq!(projects.len(), 1);
    assert_eq!((projects[0]["type"].as_str(), projects[0]["isCurrentProject"].as_bool()), (Some("personal"), Some(true)));
    let home = projects[0]["id"].as_str().unwrap().to_owned();
    let clients = ok(&run[1]).clone();
    let acme = ok(&run[2]).clone();
    assert_eq!((acme["path"].as_str(), acme["parentFolderId"].as_str()), (Some("Clients/Acme"), clients["id"].as_str()));
    assert_eq!(ok(&run[3])["folder"]["id"], acme["id"]);
    let mut applied: Vec<String> = ok(&run[4])["appliedTags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect();
    applied.sort();
    assert_eq!(applied, ["Q3", "Sales"]);
    let folders: Vec<&str> = ok(&run[5])["folders"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(folders, ["Clients", "Clients/Acme"]);
    assert_eq!(ok(&run[6])["tags"].as_array().unwrap().len(), 2);
    assert_eq!(ok(&run[7])["deletedCount"], 2);
    // The agent's own listing finds it in its folder, with the folder's path.
    let in_acme = ok(&run[8]);
    assert_eq!((in_acme["total"].as_u64(), in_acme["workflows"][0]["id"].as_str()), (Some(1), Some(wf.as_str())), "{in_acme}");
    assert_eq!(in_acme["workflows"][0]["folder"], json!({"id": acme["id"], "name": "Acme", "path": "Clients/Acme"}));
    assert_eq!(ok(&run[9])["total"], 0, "not directly in Clients: {}", ok(&run[9]));
    let asked = find(&feed.seen, EventType::ConfirmationRequest).len();
    assert_eq!(asked, 4, "create (granted for the session), move, tag, cleanup");

    // MCP sees the same folders, placement and tags.
    let found = cloud.mcp(ALICE, "search_folders", json!({"projectId": home, "query": "acme"})).await.unwrap();
    assert_eq!((found["count"].as_u64(), found["data"][0]["parentFolderId"].as_str()), (Some(1), clients["id"].as_str()));
    let listed = cloud.mcp(ALICE, "search_workflows", json!({"query": "weekly"})).await.unwrap();
    assert_eq!(listed["data"][0]["id"], wf.as_str());
    let details = cloud.mcp(ALICE, "get_workflow_details", json!({"workflowId": wf})).await.unwrap();
    assert_eq!(details["workflow"]["parentFolderId"], acme["id"]);
    let mut tags: Vec<&str> = details["workflow"]["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    tags.sort();
    assert_eq!(tags, ["Q3", "Sales"]);
    assert_eq!(cloud.mcp(ALICE, "search_executions", json!({"workflowId": wf})).await.unwrap()["count"], 0, "the test runs are gone");

    // Deleting the top folder: the card says what happens to the workflow; a denial changes nothing.
    let delete = "Delete the clients folder";
    let delete_call = tool("workspace", json!({"action": "delete-folder", "folderId": clients["id"], "folderName": "Clients"}));
    script[delete] = json!([turn(vec![delete_call.clone()]), turn(vec![delete_call]), {"text": "Deleted."}]);
    model.play(&script);
    let frames = cloud.run(&mut feed, ALICE, &t, delete).await;
    let c = card(&frames);
    assert_eq!((c["severity"].as_str(), c["resourceName"].as_str()), (Some("destructive"), Some("Clients")));
    assert_eq!(c["message"], "Delete folder \"Clients\" and its 1 subfolder. Its 1 workflow will be moved to the project root and archived.");
    assert_eq!((c["approvalDetails"]["workflows"].as_u64(), c["approvalDetails"]["workflowsOutcome"].as_str()), (Some(1), Some("archived")));
    let frames = cloud.decide(&mut feed, &frames, json!({"approved": false})).await;
    assert_eq!(cloud.mcp(ALICE, "search_folders", json!({"projectId": home})).await.unwrap()["count"], 2, "denied: nothing deleted");
    finished(&cloud.decide(&mut feed, &frames, json!({"approved": true})).await);
    let run = calls(&feed.seen);
    let deletions: Vec<&Call> = run.iter().filter(|c| c.args["action"] == "delete-folder").collect();
    assert_eq!(ok(deletions[0])["denied"], true);
    let done = ok(deletions[1]);
    assert_eq!((done["deletedFolders"].as_u64(), done["workflowsArchived"].as_u64()), (Some(2), Some(1)));
    assert_eq!(cloud.mcp(ALICE, "search_folders", json!({"projectId": home})).await.unwrap()["count"], 0);
    let details = cloud.mcp(ALICE, "get_workflow_details", json!({"workflowId": wf})).await.unwrap();
    assert_eq!((details["workflow"]["isArchived"].as_bool(), details["workflow"]["parentFolderId"].as_str()), (Some(true), None));
    assert_eq!(cloud.mcp(ALICE, "search_workflows", json!({"query": "weekly"})).await.unwrap()["count"], 0, "archived workflows are not listed");

    // A stranger can neither tag nor move alice's workflow, and is never asked.
    let stranger = "Tag that workflow";
    script[stranger] = json!([
        turn(vec![tool("workspace", json!({"action": "tag-workflow", "workflowId": wf, "tags": ["Mine"]})),
                  tool("workspace", json!({"action": "cleanup-test-executions", "workflowId": wf}))]),
        {"text": "Could not."}
    ]);
    model.play(&script);
    let bobs = thread();
    let mut bob_feed = cloud.sse_events(BOB, &bobs).await;
    finished(&cloud.run(&mut bob_feed, BOB, &bobs, stranger).await);
    for c in calls(&bob_feed.seen) {
        assert!(c.outcome.as_ref().is_err_and(|e| e.contains("not found")), "{:?}", c.outcome);
    }
    assert!(find(&bob_feed.seen, EventType::ConfirmationRequest).is_empty());
    cloud.stop().await;
}
