//! Airtable Web API (https://airtable.com/developers/web/api): bearer
//! token, `/v0/{baseId}/{table}` records, `offset` pagination, `{error}` bodies.

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

fn record(id: &str, name: &str) -> Value {
    json!({"id": id, "createdTime": "2025-01-01T00:00:00.000Z", "fields": {"Name": name}})
}

fn airtable() -> Server {
    serve(|r: &Seen| {
        if r.header("authorization") != Some("Bearer patTest") {
            return Reply::json(401, json!({"error": {"type": "AUTHENTICATION_REQUIRED", "message": "Authentication required"}}));
        }
        let b = r.json();
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/v0/meta/whoami") => Reply::json(200, json!({"id": "usr1"})),
            ("POST", "/v0/appBase1/Tasks%20Table") => Reply::json(200, json!({"id": "rec9", "createdTime": "2025-01-01T00:00:00.000Z", "fields": b["fields"]})),
            ("GET", "/v0/appBase1/Tasks%20Table") => {
                let all = [record("rec1", "a"), record("rec2", "b"), record("rec3", "c")];
                let start = if r.query.get("offset").map(String::as_str) == Some("itr/rec3") { 2 } else { 0 };
                let size = r.query.get("pageSize").or(r.query.get("maxRecords")).and_then(|p| p.parse::<usize>().ok()).unwrap_or(100).min(2);
                let page: Vec<Value> = all.iter().skip(start).take(size).cloned().collect();
                let mut body = json!({"records": page});
                if start + size < all.len() {
                    body["offset"] = json!("itr/rec3");
                }
                Reply::json(200, body)
            }
            ("GET", "/v0/appBase1/Tasks%20Table/rec1") => Reply::json(200, record("rec1", "a")),
            ("DELETE", "/v0/appBase1/Tasks%20Table/rec1") => Reply::json(200, json!({"id": "rec1", "deleted": true})),
            ("PATCH", "/v0/appBase1/Tasks%20Table") => {
                let recs: Vec<Value> = b["records"].as_array().unwrap().iter().map(|x| json!({"id": x["id"], "createdTime": "2025-01-01T00:00:00.000Z", "fields": x["fields"]})).collect();
                Reply::json(200, json!({"records": recs}))
            }
            _ => Reply::json(404, json!({"error": "NOT_FOUND"})),
        }
    })
}

fn node(parameters: Value) -> Value {
    let mut p = json!({"base": {"__rl": true, "mode": "url", "value": "https://airtable.com/appBase1/tblX"}, "table": {"__rl": true, "mode": "id", "value": "Tasks Table"}});
    for (k, v) in parameters.as_object().unwrap() {
        p[k] = v.clone();
    }
    json!({"type": "n8n-nodes-base.airtable", "typeVersion": 2.1, "parameters": p, "credentials": {"airtableTokenApi": {"id": "a1", "name": "Airtable"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = airtable();
    let engine = engine(&[("airtableTokenApi", json!({"accessToken": "patTest"}))], &[("https://api.airtable.com", server.base.as_str())]);
    (server, engine)
}

#[test]
fn create_from_input_or_defined_columns() {
    let (server, engine) = setup();
    let auto = json!({"columns": {"mappingMode": "autoMapInputData", "value": {}}, "options": {"ignoreFields": "secret", "typecast": true}});
    let st = run_node(&engine, node(auto), json!([{"Name": "Ship it", "Done": false, "secret": "x"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v0/appBase1/Tasks%20Table"));
    assert_eq!(r.header("authorization"), Some("Bearer patTest"));
    assert_eq!(r.json(), json!({"typecast": true, "fields": {"Name": "Ship it", "Done": false}}));
    // create answers the record as Airtable returns it (not flattened), as n8n's v2
    assert_eq!(output(&st)[0]["fields"]["Name"], "Ship it");

    let st = run_node(&engine, node(json!({"columns": {"mappingMode": "defineBelow", "value": {"Name": "={{ $json.n }}"}}})), json!([{"n": "Defined"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].json(), json!({"typecast": false, "fields": {"Name": "Defined"}}));
}

#[test]
fn search_pages_with_offset_and_flattens_records() {
    let (server, engine) = setup();
    let params = json!({"operation": "search", "filterByFormula": "{Done} = 0", "sort": {"property": [{"field": "Name", "direction": "desc"}]}});
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st), vec![
        json!({"id": "rec1", "createdTime": "2025-01-01T00:00:00.000Z", "Name": "a"}),
        json!({"id": "rec2", "createdTime": "2025-01-01T00:00:00.000Z", "Name": "b"}),
        json!({"id": "rec3", "createdTime": "2025-01-01T00:00:00.000Z", "Name": "c"}),
    ]);
    let seen = server.take();
    assert_eq!(seen.len(), 2);
    let q = &seen[0].query;
    assert_eq!((q.get("filterByFormula").map(String::as_str), q.get("pageSize").map(String::as_str)), (Some("{Done} = 0"), Some("100")));
    assert_eq!((q.get("sort[0][field]").map(String::as_str), q.get("sort[0][direction]").map(String::as_str)), (Some("Name"), Some("desc")));
    assert_eq!(seen[1].query.get("offset").map(String::as_str), Some("itr/rec3"));

    let st = run_node(&engine, node(json!({"operation": "search", "returnAll": false, "limit": 1})), json!([{}]));
    assert_eq!(output(&st).len(), 1);
    assert_eq!(server.take()[0].query.get("maxRecords").map(String::as_str), Some("1"));
}

#[test]
fn get_delete_update_and_errors() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"operation": "get", "id": "rec1"})), json!([{}]));
    assert_eq!(output(&st), vec![json!({"id": "rec1", "createdTime": "2025-01-01T00:00:00.000Z", "Name": "a"})]);
    let st = run_node(&engine, node(json!({"operation": "deleteRecord", "id": "rec1"})), json!([{}]));
    assert_eq!(output(&st), vec![json!({"id": "rec1", "deleted": true})]);
    assert_eq!(server.take()[1].method, "DELETE");
    let st = run_node(&engine, node(json!({"operation": "update", "columns": {"mappingMode": "defineBelow", "value": {"id": "rec2", "Name": "renamed"}, "matchingColumns": ["id"]}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.json()), ("PATCH", json!({"typecast": false, "records": [{"id": "rec2", "fields": {"Name": "renamed"}}]})));
    assert_eq!(output(&st)[0]["fields"]["Name"], "renamed");

    let st = run_node(&engine, node(json!({"operation": "get", "id": "recNope"})), json!([{}]));
    assert_eq!(st.error.unwrap().http_code.as_deref(), Some("404"));
    let st = run_node(&engine, node(json!({"operation": "upsert"})), json!([{}]));
    assert!(st.error.unwrap().message.contains("not supported yet"));
    server.take();
    assert!(engine.test_credential("airtableTokenApi", &json!({"id": "a1"})).success);
    assert_eq!(server.take()[0].path, "/v0/meta/whoami");
}
