//! Notion API (https://developers.notion.com/reference): bearer secret,
//! `Notion-Version` header, pages and database queries with
//! `start_cursor`/`has_more` pages, `{object:"error",code,message}` bodies;
//! n8n's simplified pages (`name`, `url`, `property_<snake_case>`).

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

const DB: &str = "d9824bdc84454327be8b5b47500af6ce";
const PAGE: &str = "b4eeb113e118403aa450af65ac25f0b9";

fn title(text: &str) -> Value {
    json!([{"type": "text", "text": {"content": text}, "plain_text": text}])
}

fn db_page(id: &str, name: &str, status: &str) -> Value {
    json!({
        "object": "page", "id": id, "url": format!("https://www.notion.so/{id}"),
        "parent": {"type": "database_id", "database_id": DB},
        "properties": {
            "Name": {"id": "title", "type": "title", "title": title(name)},
            "Status": {"id": "s1", "type": "select", "select": {"name": status}},
            "Due Date": {"id": "d1", "type": "date", "date": {"start": "2025-01-02", "end": null}},
            "Tags": {"id": "t1", "type": "multi_select", "multi_select": [{"name": "a"}, {"name": "b"}]},
            "Done": {"id": "c1", "type": "checkbox", "checkbox": false},
            "Notes": {"id": "r1", "type": "rich_text", "rich_text": title("first ").as_array().unwrap().iter().chain(title("second").as_array().unwrap()).cloned().collect::<Vec<_>>()}
        }
    })
}

fn notion() -> Server {
    serve(|r: &Seen| {
        if r.header("authorization") != Some("Bearer secret_test") {
            return Reply::json(401, json!({"object": "error", "status": 401, "code": "unauthorized", "message": "API token is invalid."}));
        }
        if r.header("notion-version") != Some("2022-02-22") {
            return Reply::json(400, json!({"object": "error", "status": 400, "code": "missing_version", "message": "Notion-Version header failed validation"}));
        }
        let b = r.json();
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/v1/pages") => {
                if b["parent"]["page_id"].is_string() {
                    let name = b["properties"]["title"][0]["text"]["content"].as_str().unwrap_or_default();
                    return Reply::json(200, json!({"object": "page", "id": "child-1", "url": "https://www.notion.so/child-1", "parent": {"type": "page_id", "page_id": b["parent"]["page_id"]},
                        "properties": {"title": {"id": "title", "type": "title", "title": title(name)}}}));
                }
                let name = b["properties"]["title"]["title"][0]["text"]["content"].as_str().unwrap_or_default();
                Reply::json(200, db_page("new-1", name, b["properties"]["Status"]["select"]["name"].as_str().unwrap_or("")))
            }
            ("GET", "/v1/users/me") => Reply::json(200, json!({"object": "user", "id": "bot-1", "type": "bot", "name": "n8n", "bot": {"owner": {"type": "workspace", "workspace": true}}})),
            ("GET", p) if p == format!("/v1/pages/{PAGE}") => Reply::json(200, db_page(PAGE, "Existing", "Done")),
            ("PATCH", p) if p == format!("/v1/pages/{PAGE}") => {
                let mut page = db_page(PAGE, "Existing", b["properties"]["Status"]["select"]["name"].as_str().unwrap_or("Done"));
                if b["archived"] == true {
                    page["archived"] = json!(true);
                }
                Reply::json(200, page)
            }
            ("POST", p) if p == format!("/v1/databases/{DB}/query") => {
                if b.get("filter").is_some_and(|f| f.get("bogus").is_some()) {
                    return Reply::json(400, json!({"object": "error", "status": 400, "code": "validation_error", "message": "body failed validation: body.filter.or should be defined"}));
                }
                let all = [db_page("p1", "One", "Doing"), db_page("p2", "Two", "Doing"), db_page("p3", "Three", "Doing")];
                let start = b["start_cursor"].as_str().and_then(|c| c.strip_prefix("cur-")).and_then(|c| c.parse::<usize>().ok()).unwrap_or(0);
                let size = b["page_size"].as_u64().unwrap_or(100).min(2) as usize;
                let results: Vec<Value> = all.iter().skip(start).take(size).cloned().collect();
                let more = start + size < all.len();
                Reply::json(200, json!({"object": "list", "results": results, "has_more": more, "next_cursor": if more { json!(format!("cur-{}", start + size)) } else { Value::Null }}))
            }
            _ => Reply::json(404, json!({"object": "error", "status": 404, "code": "object_not_found", "message": "Could not find the object."})),
        }
    })
}

fn node(parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.notion", "typeVersion": 2.2, "parameters": parameters, "credentials": {"notionApi": {"id": "n1", "name": "Notion"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = notion();
    let engine = engine(&[("notionApi", json!({"apiKey": "secret_test"}))], &[("https://api.notion.com", server.base.as_str())]);
    (server, engine)
}

fn simplified(id: &str, name: &str, status: &str) -> Value {
    json!({"id": id, "name": name, "url": format!("https://www.notion.so/{id}"), "property_name": name, "property_status": status,
        "property_due_date": {"start": "2025-01-02", "end": null}, "property_tags": ["a", "b"], "property_done": false, "property_notes": "first second"})
}

#[test]
fn database_page_create_maps_properties_and_blocks() {
    let (server, engine) = setup();
    let params = json!({
        "resource": "databasePage",
        "databaseId": {"__rl": true, "mode": "id", "value": DB},
        "title": "={{ $json.task }}",
        "propertiesUi": {"propertyValues": [
            {"key": "Status|select", "selectValue": "Doing"},
            {"key": "Tags|multi_select", "multiSelectValue": ["a", "b"]},
            {"key": "Done|checkbox", "checkboxValue": true},
            {"key": "Due|date", "date": "2025-01-02T10:00:00", "includeTime": false},
            {"key": "Estimate|number", "numberValue": 3},
            {"key": "Owner|people", "peopleValue": ["u-1"]},
            {"key": "Link|url", "urlValue": "", "ignoreIfEmpty": true}
        ]},
        "blockUi": {"blockValues": [{"type": "heading_2", "textContent": "Plan"}, {"type": "to_do", "textContent": "Write tests", "checked": true}]},
        "options": {"icon": "🚀"}
    });
    let st = run_node(&engine, node(params), json!([{"task": "Ship it"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/pages"));
    assert_eq!(r.header("authorization"), Some("Bearer secret_test"));
    assert_eq!(
        r.json(),
        json!({
            "parent": {"database_id": DB},
            "properties": {
                "Status": {"select": {"name": "Doing"}},
                "Tags": {"multi_select": [{"name": "a"}, {"name": "b"}]},
                "Done": {"checkbox": true},
                "Due": {"date": {"start": "2025-01-02", "end": null}},
                "Estimate": {"number": 3},
                "Owner": {"people": [{"object": "user", "id": "u-1"}]},
                "title": {"title": [{"text": {"content": "Ship it"}}]}
            },
            "children": [
                {"object": "block", "type": "heading_2", "heading_2": {"rich_text": [{"text": {"content": "Plan"}}]}},
                {"object": "block", "type": "to_do", "to_do": {"rich_text": [{"text": {"content": "Write tests"}}], "checked": true}}
            ],
            "icon": {"type": "emoji", "emoji": "🚀"}
        })
    );
    assert_eq!(output(&st), vec![simplified("new-1", "Ship it", "Doing")]);
}

#[test]
fn database_query_pages_with_a_cursor_filters_and_sorts() {
    let (server, engine) = setup();
    let params = json!({
        "resource": "databasePage", "operation": "getAll",
        "databaseId": {"__rl": true, "mode": "url", "value": format!("https://www.notion.so/{DB}?v=f2d424ba0c404733a3f500c78c881610")},
        "returnAll": true, "filterType": "manual", "matchType": "allFilters",
        "filters": {"conditions": [{"key": "Status|select", "condition": "equals", "selectValue": "Doing"}, {"key": "Estimate|number", "condition": "grater_than", "numberValue": 2}]},
        "options": {"sort": {"sortValue": [{"key": "Name|title", "direction": "ascending"}, {"timestamp": true, "key": "created_time", "direction": "descending"}]}}
    });
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, format!("/v1/databases/{DB}/query"));
    let first = json!({
        "page_size": 100,
        "filter": {"and": [{"property": "Status", "select": {"equals": "Doing"}}, {"property": "Estimate", "number": {"greater_than": 2}}]},
        "sorts": [{"property": "Name", "direction": "ascending"}, {"timestamp": "created_time", "direction": "descending"}]
    });
    assert_eq!(seen[0].json(), first);
    let mut second = first.clone();
    second["start_cursor"] = json!("cur-2");
    assert_eq!(seen[1].json(), second);
    assert_eq!(output(&st), vec![simplified("p1", "One", "Doing"), simplified("p2", "Two", "Doing"), simplified("p3", "Three", "Doing")]);

    // A limit without simplify: raw pages, the page size asked for.
    let st = run_node(&engine, node(json!({"resource": "databasePage", "operation": "getAll", "databaseId": {"__rl": true, "mode": "id", "value": DB}, "limit": 1, "simple": false})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].json(), json!({"page_size": 1}));
    assert_eq!(output(&st), vec![db_page("p1", "One", "Doing")]);

    // A JSON filter goes as written; Notion's error body reaches the node's error.
    let st = run_node(&engine, node(json!({"resource": "databasePage", "operation": "getAll", "databaseId": {"__rl": true, "mode": "id", "value": DB}, "filterType": "json", "filterJson": "{\"bogus\": 1}"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.unwrap();
    assert_eq!(e.http_code.as_deref(), Some("400"));
    assert!(e.description.unwrap().contains("body.filter.or should be defined"));
}

#[test]
fn database_page_get_and_update_by_link() {
    let (server, engine) = setup();
    let link = json!({"__rl": true, "mode": "url", "value": format!("https://www.notion.so/My-Task-{PAGE}")});
    let st = run_node(&engine, node(json!({"resource": "databasePage", "operation": "get", "pageId": link, "simple": false})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", format!("/v1/pages/{PAGE}").as_str()));
    assert_eq!(output(&st), vec![db_page(PAGE, "Existing", "Done")]);

    let params = json!({"resource": "databasePage", "operation": "update", "pageId": link, "propertiesUi": {"propertyValues": [{"key": "Status|select", "selectValue": "Blocked"}, {"key": "Notes|rich_text", "textContent": "waiting"}]}});
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.method, "PATCH");
    assert_eq!(r.json(), json!({"properties": {"Status": {"select": {"name": "Blocked"}}, "Notes": {"rich_text": [{"text": {"content": "waiting"}}]}}}));
    assert_eq!(output(&st)[0]["property_status"], "Blocked");
}

#[test]
fn page_create_under_a_page_and_archive() {
    let (server, engine) = setup();
    let parent = json!({"__rl": true, "mode": "id", "value": PAGE});
    let st = run_node(&engine, node(json!({"pageId": parent, "title": "Meeting notes", "blockUi": {"blockValues": [{"textContent": "Agenda"}]}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(
        server.take()[0].json(),
        json!({"parent": {"page_id": PAGE}, "properties": {"title": [{"text": {"content": "Meeting notes"}}]}, "children": [{"object": "block", "type": "paragraph", "paragraph": {"rich_text": [{"text": {"content": "Agenda"}}]}}]})
    );
    assert_eq!(output(&st), vec![json!({"id": "child-1", "name": "Meeting notes", "url": "https://www.notion.so/child-1"})]);

    let st = run_node(&engine, node(json!({"operation": "archive", "pageId": parent, "simple": false})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.json()), ("PATCH", json!({"archived": true})));
    assert_eq!(output(&st)[0]["archived"], true);
}

#[test]
fn the_credential_test_asks_who_the_integration_is() {
    let (server, engine) = setup();
    let ok = engine.test_credential("notionApi", &json!({"id": "n1"}));
    assert!(ok.success, "{}", ok.message);
    let seen = server.take();
    assert_eq!((seen[0].method.as_str(), seen[0].path.as_str(), seen[0].header("notion-version")), ("GET", "/v1/users/me", Some("2022-02-22")));
    let wrong = crate::support::engine(&[("notionApi", json!({"apiKey": "nope"}))], &[("https://api.notion.com", server.base.as_str())]);
    let refused = wrong.test_credential("notionApi", &json!({"id": "n1"}));
    assert!(!refused.success && refused.message.contains("401"), "{}", refused.message);
}
