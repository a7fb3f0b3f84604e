//! HubSpot APIs (https://legacydocs.hubspot.com/docs/methods/contacts,
//! .../deals, and https://developers.hubspot.com/docs/api/crm/search): a
//! private app token as bearer (or the legacy `hapikey`), contacts by
//! `vid`, lists paged by `vid-offset`/`has-more` or `offset`/`hasMore`,
//! searches by `paging.next.after`, `{status:"error",message,category}` bodies.

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

fn contact(vid: u64) -> Value {
    json!({"vid": vid, "properties": {"email": {"value": format!("c{vid}@example.com")}, "firstname": {"value": format!("C{vid}")}}})
}

fn hubspot() -> Server {
    serve(|r: &Seen| {
        let token = r.header("authorization") == Some("Bearer pat-na1-test");
        let legacy = r.query.get("hapikey").map(String::as_str) == Some("legacy-key");
        if !token && !legacy {
            return Reply::json(401, json!({"status": "error", "message": "Authentication credentials not found.", "category": "INVALID_AUTHENTICATION"}));
        }
        let b = r.json();
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/contacts/v1/contact/createOrUpdate/email/ada%40example.com") => {
                if b["properties"].as_array().is_some_and(|p| p.iter().any(|p| p["property"] == "lifecyclestage" && p["value"] == "bogus")) {
                    return Reply::json(400, json!({"status": "error", "message": "Property values were not valid", "correlationId": "c-1", "category": "VALIDATION_ERROR"}));
                }
                Reply::json(200, json!({"vid": 501, "isNew": true}))
            }
            ("GET", "/account-info/v3/details") => Reply::json(200, json!({"portalId": 62515, "accountType": "STANDARD", "timeZone": "US/Eastern", "companyCurrency": "USD", "uiDomain": "app.hubspot.com"})),
            ("PUT", "/crm-associations/v1/associations/create-batch") => Reply::empty(204),
            ("GET", "/contacts/v1/contact/vid/501/profile") => Reply::json(200, contact(501)),
            ("DELETE", "/contacts/v1/contact/vid/501") => Reply::json(200, json!({"vid": 501, "deleted": true, "reason": "OK"})),
            ("GET", "/contacts/v1/lists/all/contacts/all") => {
                let from: u64 = r.query.get("vid-offset").and_then(|o| o.parse().ok()).unwrap_or(0);
                let contacts: Vec<Value> = (1..=3).filter(|v| *v > from).take(2).map(contact).collect();
                let last = contacts.last().and_then(|c| c["vid"].as_u64()).unwrap_or(0);
                Reply::json(200, json!({"contacts": contacts, "has-more": last < 3, "vid-offset": last}))
            }
            ("POST", "/crm/v3/objects/contacts/search") => {
                let after: usize = b["after"].as_str().and_then(|a| a.parse().ok()).unwrap_or(0);
                let results: Vec<Value> = (after..3).take(2).map(|n| json!({"id": format!("{}", n + 1), "properties": {"email": format!("c{}@example.com", n + 1)}})).collect();
                let mut answer = json!({"total": 3, "results": results});
                if after + 2 < 3 {
                    answer["paging"] = json!({"next": {"after": format!("{}", after + 2)}});
                }
                Reply::json(200, answer)
            }
            ("POST", "/deals/v1/deal") => Reply::json(200, json!({"dealId": 9, "properties": {"dealname": {"value": "Big one"}}, "associations": b["associations"]})),
            ("PUT", "/deals/v1/deal/9") => Reply::json(200, json!({"dealId": 9, "properties": {"amount": {"value": "1000"}}})),
            ("GET", "/deals/v1/deal/9") => Reply::json(200, json!({"dealId": 9})),
            ("DELETE", "/deals/v1/deal/9") => Reply::empty(204),
            ("GET", "/deals/v1/deal/paged") => {
                let offset: u64 = r.query.get("offset").and_then(|o| o.parse().ok()).unwrap_or(0);
                let deals: Vec<Value> = (offset + 1..=3).take(2).map(|n| json!({"dealId": n})).collect();
                let next = offset + deals.len() as u64;
                Reply::json(200, json!({"deals": deals, "hasMore": next < 3, "offset": next}))
            }
            _ => Reply::json(404, json!({"status": "error", "message": "resource not found", "category": "OBJECT_NOT_FOUND"})),
        }
    })
}

fn node(parameters: Value) -> Value {
    let mut p = json!({"authentication": "appToken"});
    for (k, v) in parameters.as_object().unwrap() {
        p[k] = v.clone();
    }
    json!({"type": "n8n-nodes-base.hubspot", "typeVersion": 2.1, "parameters": p, "credentials": {"hubspotAppToken": {"id": "h1", "name": "HubSpot"}, "hubspotApi": {"id": "h2", "name": "HubSpot key"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = hubspot();
    let engine = engine(&[("hubspotAppToken", json!({"appToken": "pat-na1-test"})), ("hubspotApi", json!({"apiKey": "legacy-key"}))], &[("https://api.hubapi.com", server.base.as_str())]);
    (server, engine)
}

#[test]
fn contact_upsert_associates_then_returns_the_whole_contact() {
    let (server, engine) = setup();
    let params = json!({"email": "={{ $json.email }}", "additionalFields": {"firstName": "Ada", "lastName": "Lovelace", "annualRevenue": 1000, "closeDate": "2025-01-02T00:00:00.000Z",
        "associatedCompanyId": "77", "customPropertiesUi": {"customPropertiesValues": [{"property": "favourite_colour", "value": "green"}]}}});
    let st = run_node(&engine, node(params), json!([{"email": "ada@example.com"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(
        seen.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect::<Vec<_>>(),
        [("POST", "/contacts/v1/contact/createOrUpdate/email/ada%40example.com"), ("PUT", "/crm-associations/v1/associations/create-batch"), ("GET", "/contacts/v1/contact/vid/501/profile")]
    );
    assert_eq!(seen[0].header("authorization"), Some("Bearer pat-na1-test"));
    assert_eq!(
        seen[0].json(),
        json!({"properties": [{"property": "annualrevenue", "value": "1000"}, {"property": "closedate", "value": 1735776000000u64}, {"property": "firstname", "value": "Ada"},
            {"property": "lastname", "value": "Lovelace"}, {"property": "favourite_colour", "value": "green"}]})
    );
    assert_eq!(seen[1].json(), json!([{"fromObjectId": 501, "toObjectId": 77, "category": "HUBSPOT_DEFINED", "definitionId": 1}]));
    let mut expected = contact(501);
    expected["isNew"] = json!(true);
    assert_eq!(output(&st), vec![expected]);

    // "Resolve Data" set: HubSpot's answer to the update, one request.
    let st = run_node(&engine, node(json!({"email": "ada@example.com", "options": {"resolveData": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take().len(), 1);
    assert_eq!(output(&st), vec![json!({"vid": 501, "isNew": true})]);

    // HubSpot's validation error, with the legacy key in the query.
    let st = run_node(&engine, node(json!({"authentication": "apiKey", "email": "ada@example.com", "additionalFields": {"lifeCycleStage": "bogus"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().description.unwrap().contains("Property values were not valid"));
    assert_eq!(server.take()[0].query.get("hapikey").map(String::as_str), Some("legacy-key"));
}

#[test]
fn contacts_get_list_search_delete() {
    let (server, engine) = setup();
    let id = json!({"__rl": true, "mode": "id", "value": "501"});
    let st = run_node(&engine, node(json!({"operation": "get", "contactId": id, "additionalFields": {"listMemberships": false, "propertiesCollection": {"propertiesValues": {"properties": ["email", "firstname"], "propertyMode": "valueOnly"}}}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.query.get("showListMemberships").map(String::as_str), r.query.get("propertyMode").map(String::as_str)), (Some("false"), Some("value_only")));
    assert_eq!((r.query.get("property[0]").map(String::as_str), r.query.get("property[1]").map(String::as_str)), (Some("email"), Some("firstname")));
    assert_eq!(output(&st), vec![contact(501)]);

    let st = run_node(&engine, node(json!({"operation": "getAll", "returnAll": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.iter().map(|r| r.query.get("vid-offset").cloned()).collect::<Vec<_>>(), [None, Some("2".to_owned())]);
    assert_eq!(output(&st), (1..=3).map(contact).collect::<Vec<_>>());

    let st = run_node(&engine, node(json!({"operation": "getAll", "limit": 2})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].query.get("count").map(String::as_str), Some("2"));

    let filters = json!({"filterGroupsValues": [{"filtersUi": {"filterValues": [{"propertyName": "email|string", "operator": "CONTAINS_TOKEN", "value": "*@example.com"}]}}]});
    let st = run_node(&engine, node(json!({"operation": "search", "returnAll": true, "filterGroupsUi": filters, "additionalFields": {"sortBy": "email", "direction": "ASCENDING", "properties": ["email"]}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(
        seen[0].json(),
        json!({"sorts": [{"propertyName": "email", "direction": "ASCENDING"}], "limit": 100, "filterGroups": [{"filters": [{"propertyName": "email", "operator": "CONTAINS_TOKEN", "value": "*@example.com"}]}], "properties": ["email"]})
    );
    assert_eq!(seen[1].json()["after"], "2");
    assert_eq!(output(&st).len(), 3);

    let st = run_node(&engine, node(json!({"operation": "delete", "contactId": id})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st), vec![json!({"vid": 501, "deleted": true, "reason": "OK"})]);
    server.take();
}

#[test]
fn deals_create_update_list_delete() {
    let (server, engine) = setup();
    let params = json!({"resource": "deal", "stage": "appointmentscheduled", "additionalFields": {"dealName": "Big one", "amount": "500", "associatedCompany": [77], "associatedVids": [501],
        "dealOwner": {"__rl": true, "mode": "id", "value": "42"}}});
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(
        r.json(),
        json!({"properties": [{"name": "dealstage", "value": "appointmentscheduled"}, {"name": "dealname", "value": "Big one"}, {"name": "hubspot_owner_id", "value": "42"}, {"name": "amount", "value": "500"}],
            "associations": {"associatedCompanyIds": [77], "associatedVids": [501]}})
    );
    assert_eq!(output(&st)[0]["dealId"], 9);

    let deal = json!({"__rl": true, "mode": "id", "value": "9"});
    let st = run_node(&engine, node(json!({"resource": "deal", "operation": "update", "dealId": deal, "updateFields": {"amount": "1000", "stage": "closedwon"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.json()), ("PUT", json!({"properties": [{"name": "dealstage", "value": "closedwon"}, {"name": "amount", "value": "1000"}]})));

    let st = run_node(&engine, node(json!({"resource": "deal", "operation": "getAll", "returnAll": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take().iter().map(|r| r.query.get("offset").cloned()).collect::<Vec<_>>(), [None, Some("2".to_owned())]);
    assert_eq!(output(&st).len(), 3);

    // HubSpot answers a delete with 204: n8n's item says what was deleted.
    let st = run_node(&engine, node(json!({"resource": "deal", "operation": "delete", "dealId": deal})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st), vec![json!({"vid": "9", "deleted": true})]);
    server.take();
}

#[test]
fn the_credential_tests_read_the_account_details() {
    let (server, engine) = setup();
    for t in ["hubspotAppToken", "hubspotApi"] {
        let ok = engine.test_credential(t, &json!({"id": "h1"}));
        assert!(ok.success, "{t}: {}", ok.message);
        assert_eq!(server.take()[0].path, "/account-info/v3/details");
    }
    let wrong = crate::support::engine(&[("hubspotAppToken", json!({"appToken": "nope"}))], &[("https://api.hubapi.com", server.base.as_str())]);
    let refused = wrong.test_credential("hubspotAppToken", &json!({"id": "h1"}));
    assert!(!refused.success && refused.message.contains("401"), "{}", refused.message);
}

#[test]
fn a_resource_or_operation_not_described_is_refused_before_any_request() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"resource": "company", "operation": "get", "companyId": "5"})), json!([{}]));
    let e = st.error.unwrap();
    assert_eq!(e.message, "The resource 'company' is not supported yet");
    assert!(e.description.unwrap().contains("contact, deal"));
    let st = run_node(&engine, node(json!({"resource": "deal", "operation": "merge"})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "The operation 'merge' is not supported yet");
    assert!(server.take().is_empty());
}
