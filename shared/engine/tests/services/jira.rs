//! Jira REST API (https://developer.atlassian.com/cloud/jira/platform/rest/v2/,
//! v3 for comments on Cloud): basic auth (email + API token), issues,
//! JQL search paged by `nextPageToken` (Cloud) or `startAt` (Server),
//! comments in Atlassian Document Format on Cloud, `{errorMessages, errors}` bodies.

use base64::Engine as _;
use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

fn basic(user: &str, secret: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}")))
}

fn issue(n: usize) -> Value {
    json!({"id": format!("1000{n}"), "key": format!("PRJ-{n}"), "fields": {"summary": format!("Issue {n}")}})
}

fn jira() -> Server {
    serve(|r: &Seen| {
        let cloud = r.header("authorization") == Some(&basic("ada@example.com", "api-token"));
        let server = r.header("authorization") == Some(&basic("ada", "pw"));
        if !cloud && !server {
            return Reply::json(401, json!({"errorMessages": ["You are not authenticated. Authentication required to perform this operation."], "errors": {}}));
        }
        let b = r.json();
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/rest/api/2/issue") => {
                if b["fields"]["summary"].as_str().is_none_or(str::is_empty) {
                    return Reply::json(400, json!({"errorMessages": [], "errors": {"summary": "You must specify a summary of the issue."}}));
                }
                Reply::json(201, json!({"id": "10001", "key": "PRJ-1", "self": "https://jira.example/rest/api/2/issue/10001"}))
            }
            ("GET", "/rest/api/2/myself") => Reply::json(200, json!({"accountId": "5b10a2844c20165700ede21g", "emailAddress": "ada@example.com", "displayName": "Ada", "active": true})),
            ("GET", "/rest/api/2/issue/PRJ-1") => Reply::json(200, json!({
                "id": "10001", "key": "PRJ-1", "self": "https://jira.example/rest/api/2/issue/10001", "expand": "names",
                "fields": {"summary": "Login fails", "status": {"name": "To Do"}, "customfield_10010": 5},
                "names": {"summary": "Summary", "status": "Status", "customfield_10010": "Story Points"}
            })),
            ("PUT", "/rest/api/2/issue/PRJ-1") | ("DELETE", "/rest/api/2/issue/PRJ-1") | ("POST", "/rest/api/2/issue/PRJ-1/transitions") => Reply::empty(204),
            ("GET", "/rest/api/2/issue/PRJ-1/transitions") => Reply::json(200, json!({"transitions": [{"id": "21", "name": "In Progress"}, {"id": "31", "name": "Done"}]})),
            ("GET", "/rest/api/2/issue/PRJ-1/changelog") => {
                let start: usize = r.query.get("startAt").and_then(|s| s.parse().ok()).unwrap_or(0);
                let values: Vec<Value> = (0..3).skip(start).take(2).map(|n| json!({"id": format!("{n}"), "items": []})).collect();
                Reply::json(200, json!({"startAt": start, "maxResults": 2, "total": 3, "values": values}))
            }
            ("POST", "/rest/api/2/search/jql") => {
                let first = b.get("nextPageToken").is_none();
                let issues: Vec<Value> = if first { vec![issue(1), issue(2)] } else { vec![issue(3)] };
                let mut answer = json!({"issues": issues, "isLast": !first});
                if first {
                    answer["nextPageToken"] = json!("page-2");
                }
                Reply::json(200, answer)
            }
            ("POST", "/rest/api/2/search") => {
                let start = b["startAt"].as_u64().unwrap_or(0) as usize;
                let issues: Vec<Value> = (1..=3).skip(start).take(2).map(issue).collect();
                Reply::json(200, json!({"startAt": start, "maxResults": 2, "total": 3, "issues": issues}))
            }
            ("POST", "/rest/api/3/issue/PRJ-1/comment") | ("POST", "/rest/api/2/issue/PRJ-1/comment") => Reply::json(201, json!({"id": "100", "body": b["body"]})),
            ("PUT", "/rest/api/3/issue/PRJ-1/comment/100") => Reply::json(200, json!({"id": "100", "body": b["body"]})),
            ("GET", "/rest/api/3/issue/PRJ-1/comment/100") => Reply::json(200, json!({"id": "100"})),
            ("DELETE", "/rest/api/3/issue/PRJ-1/comment/100") => Reply::empty(204),
            ("GET", "/rest/api/3/issue/PRJ-1/comment") => {
                let start: usize = r.query.get("startAt").and_then(|s| s.parse().ok()).unwrap_or(0);
                let size: usize = r.query.get("maxResults").and_then(|s| s.parse().ok()).unwrap_or(50);
                let comments: Vec<Value> = (0..3).skip(start).take(size.min(2)).map(|n| json!({"id": format!("c{n}")})).collect();
                Reply::json(200, json!({"startAt": start, "maxResults": size, "total": 3, "comments": comments}))
            }
            _ => Reply::json(404, json!({"errorMessages": ["Issue does not exist or you do not have permission to see it."], "errors": {}})),
        }
    })
}

fn node(parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.jira", "typeVersion": 1, "parameters": parameters, "credentials": {"jiraSoftwareCloudApi": {"id": "j1", "name": "Jira"}, "jiraSoftwareServerApi": {"id": "j2", "name": "Jira server"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = jira();
    let engine = engine(
        &[("jiraSoftwareCloudApi", json!({"email": "ada@example.com", "apiToken": "api-token", "domain": format!("{}/", server.base)})), ("jiraSoftwareServerApi", json!({"email": "ada", "password": "pw", "domain": server.base}))],
        &[],
    );
    (server, engine)
}

fn rl(v: &str) -> Value {
    json!({"__rl": true, "mode": "id", "value": v})
}

#[test]
fn create_an_issue_with_fields_and_custom_fields() {
    let (server, engine) = setup();
    let params = json!({
        "project": rl("10000"), "issueType": rl("10002"), "summary": "={{ $json.title }}",
        "additionalFields": {"assignee": rl("acc-1"), "priority": rl("2"), "labels": ["backend"], "description": "Steps…", "parentIssueKey": "prj-9",
            "customFieldsUi": {"customFieldsValues": [{"fieldId": rl("customfield_10010"), "fieldValue": "5"}]}, "updateHistory": true}
    });
    let st = run_node(&engine, node(params), json!([{"title": "Login fails"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str(), r.query.get("updateHistory").map(String::as_str)), ("POST", "/rest/api/2/issue", Some("true")));
    assert_eq!(r.header("authorization"), Some(basic("ada@example.com", "api-token").as_str()));
    assert_eq!(
        r.json(),
        json!({"fields": {"summary": "Login fails", "project": {"id": "10000"}, "issuetype": {"id": "10002"}, "labels": ["backend"], "priority": {"id": "2"},
            "assignee": {"id": "acc-1"}, "description": "Steps…", "parent": {"key": "PRJ-9"}, "customfield_10010": "5"}})
    );
    assert_eq!(output(&st), vec![json!({"id": "10001", "key": "PRJ-1", "self": "https://jira.example/rest/api/2/issue/10001"})]);

    // Jira's own refusal comes back as the node's error.
    let st = run_node(&engine, node(json!({"project": rl("10000"), "issueType": rl("10002"), "summary": ""})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().description.unwrap().contains("You must specify a summary of the issue."));
}

#[test]
fn get_simplified_update_with_a_transition_and_delete() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"operation": "get", "issueKey": "PRJ-1", "simplifyOutput": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].query.get("expand").map(String::as_str), Some(",names"));
    assert_eq!(output(&st), vec![json!({"id": "10001", "key": "PRJ-1", "self": "https://jira.example/rest/api/2/issue/10001", "summary": "Login fails", "status": {"name": "To Do"}, "Story Points": 5})]);

    let st = run_node(&engine, node(json!({"operation": "update", "issueKey": "PRJ-1", "updateFields": {"summary": "Login fails on Safari", "statusId": rl("21")}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect::<Vec<_>>(), [("PUT", "/rest/api/2/issue/PRJ-1"), ("POST", "/rest/api/2/issue/PRJ-1/transitions")]);
    assert_eq!(seen[0].json(), json!({"fields": {"summary": "Login fails on Safari"}}));
    assert_eq!(seen[1].json(), json!({"transition": {"id": "21"}}));
    assert_eq!(output(&st), vec![json!({"success": true})]);

    let st = run_node(&engine, node(json!({"operation": "delete", "issueKey": "PRJ-1", "deleteSubtasks": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.query.get("deleteSubtasks").map(String::as_str)), ("DELETE", Some("true")));
    assert_eq!(output(&st), vec![json!({"success": true})]);

    let st = run_node(&engine, node(json!({"operation": "transitions", "issueKey": "PRJ-1"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st).len(), 2);
    server.take();

    let st = run_node(&engine, node(json!({"operation": "get", "issueKey": "PRJ-404"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().description.unwrap().contains("Issue does not exist"));
}

#[test]
fn search_pages_by_token_on_cloud_and_by_start_on_server() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"operation": "getAll", "returnAll": true, "options": {"jql": "project = PRJ", "fields": "summary,status", "expand": ["names"]}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen[0].json(), json!({"maxResults": 100, "expand": "names", "fields": ["summary", "status"], "jql": "project = PRJ"}));
    assert_eq!(seen[1].json(), json!({"maxResults": 100, "expand": "names", "fields": ["summary", "status"], "jql": "project = PRJ", "nextPageToken": "page-2"}));
    assert_eq!(output(&st).iter().map(|i| i["key"].clone()).collect::<Vec<_>>(), ["PRJ-1", "PRJ-2", "PRJ-3"].map(Value::from).to_vec());

    let st = run_node(&engine, node(json!({"jiraVersion": "server", "operation": "getAll", "returnAll": true, "options": {"jql": "project = PRJ"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["/rest/api/2/search", "/rest/api/2/search"]);
    assert_eq!(seen[0].header("authorization"), Some(basic("ada", "pw").as_str()));
    assert_eq!(seen[1].json()["startAt"], 2);
    assert_eq!(output(&st).len(), 3);

    let st = run_node(&engine, node(json!({"operation": "getAll", "limit": 1, "options": {"jql": "project = PRJ"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!((server.take().len(), output(&st).len()), (1, 1));

    let st = run_node(&engine, node(json!({"operation": "changelog", "issueKey": "PRJ-1", "returnAll": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st).len(), 3);
}

#[test]
fn comments_in_document_format_on_cloud_and_text_on_server() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"resource": "issueComment", "issueKey": "PRJ-1", "comment": "Looks good", "options": {"expand": "renderedBody"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.path.as_str(), r.query.get("expand").map(String::as_str)), ("/rest/api/3/issue/PRJ-1/comment", Some("renderedBody")));
    let adf = json!({"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": [{"type": "text", "text": "Looks good"}]}]});
    assert_eq!(r.json(), json!({"body": adf}));
    assert_eq!(output(&st), vec![json!({"id": "100", "body": adf})]);

    let st = run_node(&engine, node(json!({"jiraVersion": "server", "resource": "issueComment", "issueKey": "PRJ-1", "comment": "Plain"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.path.as_str(), r.json()), ("/rest/api/2/issue/PRJ-1/comment", json!({"body": "Plain"})));

    let st = run_node(&engine, node(json!({"resource": "issueComment", "operation": "update", "issueKey": "PRJ-1", "commentId": "100", "jsonParameters": true, "commentJson": "{\"type\":\"doc\",\"version\":1,\"content\":[]}"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].json(), json!({"body": {"type": "doc", "version": 1, "content": []}}));

    let st = run_node(&engine, node(json!({"resource": "issueComment", "operation": "getAll", "issueKey": "PRJ-1", "returnAll": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st).len(), 3);
    let seen = server.take();
    assert_eq!(seen.iter().map(|r| r.query.get("startAt").cloned()).collect::<Vec<_>>(), [None, Some("2".to_owned())]);

    let st = run_node(&engine, node(json!({"resource": "issueComment", "operation": "remove", "issueKey": "PRJ-1", "commentId": "100"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].method, "DELETE");
    assert_eq!(output(&st), vec![json!({"success": true})]);
}

#[test]
fn the_credential_tests_ask_who_is_logged_in() {
    let server = jira();
    let engine = crate::support::engine(
        &[("jiraSoftwareCloudApi", json!({"email": "ada@example.com", "apiToken": "api-token", "domain": server.base})), ("jiraSoftwareServerApi", json!({"email": "ada", "password": "pw", "domain": server.base}))],
        &[],
    );
    for t in ["jiraSoftwareCloudApi", "jiraSoftwareServerApi"] {
        let ok = engine.test_credential(t, &json!({"id": "j1"}));
        assert!(ok.success, "{t}: {}", ok.message);
        assert_eq!(server.take()[0].path, "/rest/api/2/myself");
    }
    let wrong = crate::support::engine(&[("jiraSoftwareServerApi", json!({"email": "ada", "password": "nope", "domain": server.base}))], &[]);
    let refused = wrong.test_credential("jiraSoftwareServerApi", &json!({"id": "j1"}));
    assert!(!refused.success && refused.message.contains("401"), "{}", refused.message);
}
