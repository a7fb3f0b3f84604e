//! GitHub REST API (https://docs.github.com/rest): `Authorization: token`,
//! a User-Agent required, JSON bodies, `Link: <…?page=n>; rel="next"`
//! pagination, 204 for lock and delete, `{message, documentation_url}` errors.

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

fn github() -> Server {
    serve(|r: &Seen| {
        if r.header("user-agent").is_none() {
            return Reply::json(403, json!({"message": "Request forbidden by administrative rules. Please make sure your request has a User-Agent header"}));
        }
        if r.header("authorization") != Some("token ghp_test") {
            return Reply::json(401, json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}));
        }
        let b = r.json();
        let issue = |n: u64, title: &Value| json!({"number": n, "title": title, "state": "open", "html_url": format!("https://github.com/acme/app/issues/{n}")});
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/user") => Reply::json(200, json!({"login": "octocat"})),
            ("POST", "/repos/acme/app/issues") => Reply::json(201, json!({"number": 12, "title": b["title"], "body": b["body"], "labels": b["labels"], "assignees": b["assignees"], "state": "open"})),
            ("GET", "/repos/acme/app/issues/12") => Reply::json(200, issue(12, &json!("Crash on start"))),
            ("PATCH", "/repos/acme/app/issues/12") => Reply::json(200, json!({"number": 12, "state": b["state"], "title": "Crash on start"})),
            ("POST", "/repos/acme/app/issues/12/comments") => Reply::json(201, json!({"id": 99, "body": b["body"]})),
            ("PUT", "/repos/acme/app/issues/12/lock") => Reply::empty(204),
            ("POST", "/repos/acme/app/releases") => Reply::json(201, json!({"id": 7, "tag_name": b["tag_name"], "name": b["name"], "draft": b["draft"]})),
            ("DELETE", "/repos/acme/app/releases/7") => Reply::empty(204),
            ("GET", "/repos/acme/app/issues") => {
                let page: usize = r.query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
                let per: usize = r.query.get("per_page").and_then(|p| p.parse().ok()).unwrap_or(30);
                let all: Vec<Value> = (1..=5).map(|n| issue(n, &json!(format!("issue {n}")))).collect();
                let items: Vec<Value> = all.iter().skip((page - 1) * per.min(2)).take(per.min(2)).cloned().collect();
                let mut reply = Reply::json(200, Value::Array(items));
                if page * 2 < all.len() {
                    reply.headers.push(("link", format!("<https://api.github.com/repositories/1/issues?per_page={per}&page={}>; rel=\"next\", <https://api.github.com/repositories/1/issues?page=3>; rel=\"last\"", page + 1)));
                }
                reply
            }
            _ => Reply::json(404, json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})),
        }
    })
}

fn node(version: f64, parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.github", "typeVersion": version, "parameters": parameters, "credentials": {"githubApi": {"id": "g1", "name": "GitHub"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = github();
    let engine = engine(&[("githubApi", json!({"server": "https://api.github.com", "accessToken": "ghp_test"}))], &[("https://api.github.com", server.base.as_str())]);
    (server, engine)
}

fn locators() -> Value {
    json!({"owner": {"__rl": true, "mode": "url", "value": "https://github.com/acme"}, "repository": {"__rl": true, "mode": "name", "value": "app"}})
}

fn with(mut base: Value, more: Value) -> Value {
    for (k, v) in more.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[test]
fn issues_create_get_edit_comment_and_lock() {
    let (server, engine) = setup();
    let params = with(locators(), json!({"title": "={{ $json.t }}", "body": "Steps…", "labels": [{"label": "bug"}, {"label": "p1"}], "assignees": [{"assignee": "octocat"}]}));
    let st = run_node(&engine, node(1.1, params), json!([{"t": "Crash on start"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/repos/acme/app/issues"));
    assert_eq!(r.header("authorization"), Some("token ghp_test"));
    assert_eq!(r.json(), json!({"title": "Crash on start", "body": "Steps…", "labels": ["bug", "p1"], "assignees": ["octocat"]}));
    assert_eq!(output(&st)[0]["number"], 12);

    // v1: owner and repository are plain strings; the issue number an expression.
    let plain = json!({"owner": "acme", "repository": "app"});
    let st = run_node(&engine, node(1.0, with(plain.clone(), json!({"operation": "get", "issueNumber": "={{ $json.n }}"}))), json!([{"n": 12}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].path, "/repos/acme/app/issues/12");
    assert_eq!(output(&st)[0]["title"], "Crash on start");

    let st = run_node(&engine, node(1.0, with(plain.clone(), json!({"operation": "edit", "issueNumber": 12, "editFields": {"state": "closed", "state_reason": "completed"}}))), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.json()), ("PATCH", json!({"state": "closed", "state_reason": "completed"})));

    let st = run_node(&engine, node(1.0, with(plain.clone(), json!({"operation": "createComment", "issueNumber": 12, "body": "Fixed in #13"}))), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].path, "/repos/acme/app/issues/12/comments");
    assert_eq!(output(&st)[0], json!({"id": 99, "body": "Fixed in #13"}));

    let st = run_node(&engine, node(1.0, with(plain, json!({"operation": "lock", "issueNumber": 12, "lockReason": "too heated"}))), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.query.get("lock_reason").map(String::as_str)), ("PUT", Some("too heated")));
    assert_eq!(output(&st), vec![json!({"success": true})]);
}

#[test]
fn repository_issues_follow_the_link_header_and_releases() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(1.1, with(locators(), json!({"resource": "repository", "returnAll": true, "getRepositoryIssuesFilters": {"state": "all", "labels": "bug"}}))), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let titles: Vec<Value> = output(&st).iter().map(|i| i["number"].clone()).collect();
    assert_eq!(titles, [1, 2, 3, 4, 5].map(Value::from).to_vec());
    let seen = server.take();
    let pages: Vec<Option<&str>> = seen.iter().map(|r| r.query.get("page").map(String::as_str)).collect();
    assert_eq!(pages, [None, Some("2"), Some("3")]);
    assert!(seen.iter().all(|r| r.query.get("state").map(String::as_str) == Some("all") && r.query.get("per_page").map(String::as_str) == Some("100")));

    let st = run_node(&engine, node(1.1, with(locators(), json!({"resource": "repository", "limit": 2}))), json!([{}]));
    assert_eq!(output(&st).len(), 2);
    assert_eq!(server.take().len(), 1, "no paging without Return All");

    let st = run_node(&engine, node(1.1, with(locators(), json!({"resource": "release", "releaseTag": "v1.2.0", "additionalFields": {"name": "1.2", "draft": true}}))), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].json(), json!({"tag_name": "v1.2.0", "name": "1.2", "draft": true}));
    let st = run_node(&engine, node(1.1, with(locators(), json!({"resource": "release", "operation": "delete", "release_id": "7"}))), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].method, "DELETE");
    assert_eq!(output(&st), vec![json!({"success": true})]);
}

#[test]
fn errors_and_the_credential_test() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(1.0, json!({"owner": "acme", "repository": "gone", "operation": "get", "issueNumber": 1})), json!([{}]));
    let e = st.error.unwrap();
    assert_eq!(e.http_code.as_deref(), Some("404"));
    assert_eq!(e.message, "The resource you are requesting could not be found");
    let st = run_node(&engine, node(1.0, json!({"resource": "workflow", "owner": "acme", "repository": "app"})), json!([{}]));
    assert!(st.error.unwrap().message.contains("GitHub workflow operations are not supported yet"));
    server.take();
    let ok = engine.test_credential("githubApi", &json!({"id": "g1"}));
    assert!(ok.success, "{}", ok.message);
    assert_eq!(server.take()[0].path, "/user");
}
