//! The agent builds workflows, end to end through HTTP + SSE with the
//! scripted model (`fixtures/workflow_builder_script.json`) and the real
//! tools: workspace files (a workflow JSON file and an SDK `.workflow.ts`
//! file), build-workflow, listing under a name filter and a limit, an edit
//! and a rebuild of the same workflow, archive denied then approved, a
//! restored version, publishing with approval and approvalSummary (seen by
//! MCP `get_workflow_details`), a blocked action, every refusal, and a
//! second user who sees none of it.

mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use serde_json::{json, Value};

const SCRIPT: &str = "workflow_builder_script.json";

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
            let settled = frames.iter().map(payload).find(|p| p["toolCallId"] == id && (p.get("result").is_some() || p.get("error").is_some()))?;
            let outcome = match settled.get("result") {
                Some(r) => Ok(r.clone()),
                None => Err(settled["error"].as_str().unwrap_or_default().to_owned()),
            };
            Some(Call { name: c["toolName"].as_str().unwrap_or_default().to_owned(), args: c["args"].clone(), outcome })
        })
        .collect()
}

fn ok(c: &Call) -> &Value {
    c.outcome.as_ref().unwrap_or_else(|e| panic!("{} {} failed: {e}", c.name, c.args))
}

fn err(c: &Call) -> &str {
    match &c.outcome {
        Err(e) => e,
        Ok(v) => panic!("{} {} was expected to fail, got {v}", c.name, c.args),
    }
}

/// The JSON inside an `<untrusted_data>` envelope.
fn unwrap_envelope(text: &Value) -> Value {
    let t = text.as_str().expect("an envelope string");
    assert!(t.starts_with("<untrusted_data source=\"workflow:"), "outside data is enveloped: {t}");
    let body = t.split_once('\n').unwrap().1.rsplit_once('\n').unwrap().0;
    serde_json::from_str(body).unwrap()
}

impl Cloud {
    /// Sends a chat message and reads its run to the end (or to a confirmation request).
    async fn run(&self, feed: &mut Feed, key: &str, thread: &str, message: &str) -> Vec<Frame> {
        let (status, body) = self.chat(key, thread, message).await;
        assert_eq!(status, 200, "{body}");
        feed.until(WAIT, |f| matches!(f.kind(), EventType::RunFinish | EventType::ConfirmationRequest)).await
    }

    /// Answers the run's confirmation request; the run's frames so far and
    /// up to its end.
    async fn decide(&self, feed: &mut Feed, frames: &[Frame], approved: bool) -> Vec<Frame> {
        let (status, body) = self.confirm(ALICE, &request_id(frames), json!({"approved": approved})).await;
        assert_eq!(status, 200, "{body}");
        let rest = feed.until(WAIT, |f| matches!(f.kind(), EventType::RunFinish | EventType::ConfirmationRequest)).await;
        [frames, rest.as_slice()].concat()
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

fn finished(frames: &[Frame]) {
    let last = frames.last().unwrap();
    assert_eq!(last.kind(), EventType::RunFinish);
    assert_eq!(payload(last)["status"], "completed", "{:?}", kinds(frames));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_agent_builds_edits_archives_restores_and_publishes_workflows() {
    let cloud = cloud(Setup { script: SCRIPT, stubs: false, approval_policy: Some("workflows.unpublish=blocked"), ..Setup::default() }).await;
    // A workflow made through MCP: the two front doors share one instance.
    let weekly = "export default workflow('weekly', 'Weekly report').add(trigger({ type: 'n8n-nodes-base.manualTrigger', version: 1, config: { name: 'Start' } }));";
    cloud.mcp(ALICE, "create_workflow_from_code", json!({"code": weekly})).await.expect("created through MCP");

    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;

    // 1. Two source files, two builds, listings.
    let frames = cloud.run(&mut feed, ALICE, &t, "Build the order workflows").await;
    finished(&frames);
    let c = calls(&frames);
    assert!(ok(&c[0])["content"].as_str().unwrap().contains("build-workflow"), "the skill loads");
    assert_eq!(ok(&c[1])["created"], true);
    let intake = ok(&c[3]).clone();
    let triage = ok(&c[4]).clone();
    for (b, file, name) in [(&intake, "orders.json", "Order intake"), (&triage, "triage.workflow.ts", "Order triage")] {
        assert_eq!(b["success"], true, "{b}");
        assert_eq!((b["filePath"].as_str(), b["workflowName"].as_str()), (Some(file), Some(name)));
        assert_eq!(b["sourceHash"].as_str().map(str::len), Some(64));
        assert!(b["workItemId"].is_string());
    }
    assert_eq!(triage["workItemId"], "wi-triage");
    let (intake_id, triage_id) = (intake["workflowId"].as_str().unwrap().to_owned(), triage["workflowId"].as_str().unwrap().to_owned());
    assert_ne!(intake_id, triage_id);
    let filtered = ok(&c[5]);
    assert_eq!((filtered["total"].as_u64(), filtered["totalInScope"].as_u64()), (Some(2), Some(3)), "{filtered}");
    assert_eq!(filtered["workflows"].as_array().unwrap().len(), 1);
    let note = filtered["note"].as_str().expect("a note when a filter or the limit left workflows out");
    assert!(note.contains("Filtered by name: 2 of 3") && note.contains("Showing 1 of 2"), "{note}");
    let row = &filtered["workflows"][0];
    for field in ["id", "name", "activeVersionId", "isArchived", "createdAt", "updatedAt"] {
        assert!(row.get(field).is_some(), "{field} missing from {row}");
    }
    assert!(row.get("project").is_none(), "one project in scope: no project column");
    let all = ok(&c[6]);
    assert_eq!((all["total"].as_u64(), all.get("note")), (Some(3), None));
    let files: Vec<Value> = ok(&c[7])["files"].as_array().unwrap().clone();
    let path_of = |f: &Value| f["path"].as_str().unwrap().to_owned();
    assert!(files.iter().any(|f| path_of(f) == "orders.json" && f.get("readOnly").is_none()));
    assert!(files.iter().any(|f| path_of(f) == "knowledge-base/index.json" && f["readOnly"] == true));
    assert!(files.iter().any(|f| path_of(f).starts_with("knowledge-base/templates/")));
    assert_eq!(ok(&c[8])["matches"][0]["text"].as_str().map(|t| t.contains("rightValue: 100")), Some(true));

    // 2. Edit the file, rebuild by filePath alone: same workflow, new version.
    let frames = cloud.run(&mut feed, ALICE, &t, "Raise the triage threshold").await;
    finished(&frames);
    let c = calls(&frames);
    let window = ok(&c[0]);
    assert_eq!((window["offset"].as_u64(), window["lineCount"].as_u64()), (Some(4), Some(2)));
    assert!(window["content"].as_str().unwrap().contains("rightValue: 100"));
    assert_eq!(ok(&c[1])["replacements"], 1);
    let rebuilt = ok(&c[2]);
    assert_eq!(rebuilt["workflowId"].as_str(), Some(triage_id.as_str()), "{rebuilt}");
    assert_ne!(rebuilt["versionId"], triage["versionId"]);
    assert_ne!(rebuilt["sourceHash"], triage["sourceHash"]);
    assert_eq!(rebuilt["workItemId"], "wi-triage", "the binding remembers the work item");
    let details = cloud.mcp(ALICE, "get_workflow_details", json!({"workflowId": triage_id})).await.unwrap();
    let cond = &details["workflow"]["nodes"][1]["parameters"]["conditions"]["conditions"][0];
    assert_eq!(cond["rightValue"], 250, "{details}");

    // 3. Archive: denied once (structured, nothing changed), then approved.
    let frames = cloud.run(&mut feed, ALICE, &t, "Archive the intake workflow").await;
    let req = payload(frames.last().unwrap());
    assert_eq!(frames.last().unwrap().kind(), EventType::ConfirmationRequest);
    assert_eq!((req["toolName"].as_str(), req["severity"].as_str()), (Some("workflows"), Some("warning")));
    assert_eq!(req["resourceName"], "Order intake", "the card names the workflow, not its id");
    assert_eq!(req["message"], "Archive workflow 'Order intake'?");
    assert_eq!(req["approvalDetails"]["action"], "archive");
    assert_eq!(req["args"]["workflowId"].as_str(), Some(intake_id.as_str()), "the reference was resolved");
    let frames = cloud.decide(&mut feed, &frames, false).await;
    finished(&frames);
    let c = calls(&frames);
    assert_eq!(ok(&c[1])["denied"], true, "{:?}", c[1]);
    assert_eq!((ok(&c[2])["found"].as_bool(), ok(&c[2])["isArchived"].as_bool()), (Some(true), Some(false)), "a denial changes nothing");
    let body = unwrap_envelope(&ok(&c[2])["workflow"]);
    assert_eq!(body["nodes"].as_array().map(Vec::len), Some(2), "a small workflow comes whole");
    let frames = cloud.run(&mut feed, ALICE, &t, "Archive the intake workflow").await;
    let frames = cloud.decide(&mut feed, &frames, true).await;
    finished(&frames);
    let c = calls(&frames);
    assert_eq!(ok(&c[1]), &json!({"success": true}));
    assert_eq!(ok(&c[2])["isArchived"], true);

    // 4. Restore the first version of the triage workflow (approved).
    let frames = cloud.run(&mut feed, ALICE, &t, "Restore the first triage version").await;
    assert_eq!(payload(frames.last().unwrap())["resourceName"], "Order triage");
    let versions = calls(&frames)[1].outcome.clone().unwrap();
    let rows = versions["versions"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0]["isCurrentDraft"].as_bool(), rows[1]["isCurrentDraft"].as_bool()), (Some(true), Some(false)));
    assert!(rows[0]["authors"].as_array().is_some_and(|a| !a.is_empty()) && rows[0].get("autosaved").is_some() && rows[0].get("isActive").is_some());
    let frames = cloud.decide(&mut feed, &frames, true).await;
    finished(&frames);
    let c = calls(&frames);
    let restored = ok(&c[2]);
    assert_eq!(restored["success"], true);
    assert_eq!(restored["publishState"]["live"], "unpublished");
    assert!(restored["publishState"]["activeVersionId"].is_null());
    assert!(restored["publishStateNote"].as_str().unwrap().contains("not published"));
    let code = ok(&c[3])["code"].as_str().unwrap();
    assert!(code.starts_with("<untrusted_data source=\"workflow:") && code.contains("rightValue: 100"), "{code}");

    // 5. Publish with approval and approvalSummary; MCP sees the active version.
    let frames = cloud.run(&mut feed, ALICE, &t, "Publish the triage workflow").await;
    let req = payload(frames.last().unwrap());
    assert_eq!(req["resourceName"], "Order triage");
    // The card states that the build was never verified (the call acknowledged it).
    let message = req["message"].as_str().unwrap();
    assert!(message.starts_with("Route orders over 100 to review as they arrive") && message.contains("Not verified"), "{message}");
    assert_eq!(req["approvalDetails"]["summary"], "Route orders over 100 to review as they arrive");
    assert_eq!(req["approvalDetails"]["verification"]["status"], "unverified");
    let (status, body) = cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true, "scope": "session"})).await;
    assert_eq!(status, 200, "{body}");
    let frames = [frames, feed.until_type(EventType::RunFinish, WAIT).await].concat();
    finished(&frames);
    let published = ok(&calls(&frames)[1]).clone();
    assert_eq!(published["success"], true);
    let active = published["activeVersionId"].as_str().unwrap().to_owned();
    let details = cloud.mcp(ALICE, "get_workflow_details", json!({"workflowId": triage_id})).await.unwrap();
    assert_eq!(details["workflow"]["activeVersionId"].as_str(), Some(active.as_str()));
    assert_eq!(details["workflow"]["active"], true);
    assert_eq!(details["workflow"]["activeVersion"]["versionId"].as_str(), Some(active.as_str()));

    // "Always allow" for the session: publishing this workflow again does not ask.
    let frames = cloud.run(&mut feed, ALICE, &t, "Publish the triage workflow again").await;
    finished(&frames);
    assert!(find(&frames, EventType::ConfirmationRequest).is_empty(), "the session grant covers it");
    assert_eq!(ok(&calls(&frames)[1])["success"], true);

    // 6. The admin blocked unpublishing: a structured refusal, no card.
    let frames = cloud.run(&mut feed, ALICE, &t, "Unpublish the triage workflow").await;
    finished(&frames);
    assert!(find(&frames, EventType::ConfirmationRequest).is_empty());
    let blocked = ok(&calls(&frames)[1]).clone();
    assert_eq!((blocked["blocked"].as_bool(), blocked["reason"].as_str()), (Some(true), Some("blocked_by_admin")));
    let details = cloud.mcp(ALICE, "get_workflow_details", json!({"workflowId": triage_id})).await.unwrap();
    assert_eq!(details["workflow"]["activeVersionId"].as_str(), Some(active.as_str()), "still published");

    // 7. Every refusal answers clearly and saves nothing.
    let before = cloud.mcp(ALICE, "search_workflows", json!({})).await.unwrap()["count"].clone();
    let frames = cloud.run(&mut feed, ALICE, &t, "Try what is refused").await;
    finished(&frames);
    let c = calls(&frames);
    assert!(err(&c[0]).contains("not found"), "setup of a workflow that does not exist: {}", err(&c[0]));
    assert_eq!(ok(&c[1])["found"], false);
    assert!(ok(&c[1])["error"].as_str().unwrap().contains("no-such-workflow"));
    assert!(err(&c[2]).contains("no file \"missing.workflow.ts\""), "{}", err(&c[2]));
    assert!(err(&c[3]).contains("read-only"), "{}", err(&c[3]));
    assert!(err(&c[4]).contains("not found"), "{}", err(&c[4]));
    assert!(err(&c[5]).contains("occurs 2 times"), "{}", err(&c[5]));
    let broken = ok(&c[7]);
    assert_eq!(broken["success"], false);
    assert_eq!((broken["errors"][0]["code"].as_str(), broken["errors"][0]["nodeName"].as_str()), (Some("UNKNOWN_NODE_TYPE"), Some("Post to Mattermost")));
    let foldered = ok(&c[9]);
    assert_eq!(foldered["success"], false);
    assert_eq!(foldered["errors"][0]["code"], "FOLDER_NOT_RESOLVED");
    assert_eq!(foldered["folderResolution"]["reason"], "not-found");
    assert!(err(&c[10]).contains("read-only knowledge base"), "{}", err(&c[10]));
    assert_eq!(ok(&c[11])["total"], 0, "projectId only narrows to projects the user can read");
    let after = cloud.mcp(ALICE, "search_workflows", json!({})).await.unwrap()["count"].clone();
    assert_eq!(before, after, "no refused build saved a workflow");

    // 8. A second user sees none of it.
    let tb = thread();
    let mut bob_feed = cloud.events(BOB, &tb).await;
    let frames = cloud.run(&mut bob_feed, BOB, &tb, "Show me the workflows").await;
    finished(&frames);
    let c = calls(&frames);
    assert_eq!(ok(&c[0])["total"], 0);
    assert!(ok(&c[1])["files"].as_array().unwrap().iter().all(|f| f["readOnly"] == true), "only the knowledge base");
    assert!(err(&c[2]).contains("no file"), "Alice's files are hers");
    let stranger = cloud.mcp(BOB, "get_workflow_details", json!({"workflowId": triage_id})).await.unwrap_err();
    assert!(stranger.to_lowercase().contains("not found"), "{stranger}");
    let (status, _) = cloud.chat(BOB, &t, "Build the order workflows").await;
    assert_eq!(status, 404, "nor Alice's thread");

    cloud.stop().await;
}
