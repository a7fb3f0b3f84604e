//! Stripe API (https://docs.stripe.com/api): secret key as bearer,
//! form-encoded bodies with bracketed nested keys, lists paged by
//! `starting_after` + `has_more`, `{error:{type,code,message}}` bodies.

use std::collections::BTreeMap;

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

/// The form body as its pairs.
fn form(r: &Seen) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(&r.body).into_owned().collect()
}

fn pairs(p: &[(&str, &str)]) -> BTreeMap<String, String> {
    p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn customer(n: usize) -> Value {
    json!({"id": format!("cus_{n}"), "object": "customer", "name": format!("Customer {n}"), "email": format!("c{n}@example.com")})
}

/// A list page: at most two entries per page whatever `limit` asks (so paging shows).
fn page(all: &[Value], r: &Seen, url: &str) -> Reply {
    let start = r.query.get("starting_after").and_then(|id| all.iter().position(|c| c["id"] == *id)).map_or(0, |p| p + 1);
    let limit = r.query.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(10).min(2);
    let data: Vec<Value> = all.iter().skip(start).take(limit).cloned().collect();
    Reply::json(200, json!({"object": "list", "url": url, "has_more": start + data.len() < all.len(), "data": data}))
}

fn stripe() -> Server {
    serve(|r: &Seen| {
        if r.header("authorization") != Some("Bearer sk_test_123") {
            return Reply::json(401, json!({"error": {"message": "Invalid API Key provided: sk_test_***", "type": "invalid_request_error"}}));
        }
        let f = form(r);
        let customers: Vec<Value> = (1..=5).map(customer).collect();
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/v1/balance") => Reply::json(200, json!({"object": "balance", "available": [{"amount": 1200, "currency": "usd"}], "livemode": false})),
            ("POST", "/v1/customers") => Reply::json(200, json!({"id": "cus_new", "object": "customer", "name": f["name"], "email": f.get("email"), "metadata": {"plan": f.get("metadata[plan]")}})),
            ("GET", "/v1/customers") => {
                let all: Vec<Value> = customers.into_iter().filter(|c| r.query.get("email").is_none_or(|e| c["email"] == *e)).collect();
                page(&all, r, "/v1/customers")
            }
            ("GET", "/v1/customers/cus_1") => Reply::json(200, customer(1)),
            ("POST", "/v1/customers/cus_1") => Reply::json(200, json!({"id": "cus_1", "object": "customer", "phone": f.get("phone")})),
            ("DELETE", "/v1/customers/cus_1") => Reply::json(200, json!({"id": "cus_1", "object": "customer", "deleted": true})),
            ("GET", p) if p.starts_with("/v1/customers/") => {
                let id = p.trim_start_matches("/v1/customers/");
                Reply::json(404, json!({"error": {"code": "resource_missing", "message": format!("No such customer: '{id}'"), "param": "id", "type": "invalid_request_error"}}))
            }
            ("POST", "/v1/customers/cus_1/sources") => Reply::json(200, json!({"id": f["source"].replace("tok_", "card_"), "object": "card", "customer": "cus_1", "last4": "4242"})),
            ("POST", "/v1/sources") => Reply::json(200, json!({"id": "src_1", "object": "source", "type": f["type"], "amount": f["amount"].parse::<u64>().unwrap(), "currency": f["currency"]})),
            ("POST", "/v1/charges") => Reply::json(200, json!({"id": "ch_1", "object": "charge", "amount": 1999, "currency": f["currency"], "customer": f["customer"], "source": {"id": f["source"]}})),
            ("GET", "/v1/charges") => page(&[json!({"id": "ch_1", "object": "charge"}), json!({"id": "ch_2", "object": "charge"})], r, "/v1/charges"),
            ("GET", "/v1/charges/ch_1") => Reply::json(200, json!({"id": "ch_1", "object": "charge", "amount": 1999})),
            ("POST", "/v1/charges/ch_1") => Reply::json(200, json!({"id": "ch_1", "object": "charge", "description": f.get("description")})),
            ("POST", "/v1/coupons") => Reply::json(200, json!({"id": "co_1", "object": "coupon", "duration": f["duration"], "percent_off": f.get("percent_off")})),
            ("POST", "/v1/tokens") => Reply::json(200, json!({"id": "tok_1", "object": "token", "card": {"last4": "4242"}})),
            ("GET", "/v1/webhook_endpoints") => {
                let all: Vec<Value> = (1..=3).map(|n| json!({"id": format!("we_{n}"), "object": "webhook_endpoint", "url": format!("https://example.com/hook/{n}"), "enabled_events": ["charge.succeeded"], "status": "enabled"})).collect();
                page(&all, r, "/v1/webhook_endpoints")
            }
            _ => Reply::json(404, json!({"error": {"message": "Unrecognized request URL", "type": "invalid_request_error"}})),
        }
    })
}

fn node(parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.stripe", "typeVersion": 1, "parameters": parameters, "credentials": {"stripeApi": {"id": "s1", "name": "Stripe"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = stripe();
    let engine = engine(&[("stripeApi", json!({"secretKey": "sk_test_123"}))], &[("https://api.stripe.com", server.base.as_str())]);
    (server, engine)
}

#[test]
fn customer_create_sends_a_form_with_nested_fields() {
    let (server, engine) = setup();
    let params = json!({
        "resource": "customer", "operation": "create", "name": "={{ $json.name }}",
        "additionalFields": {
            "email": "ada@example.com",
            "metadata": {"metadataProperties": [{"key": "plan", "value": "pro"}, {"key": "seats", "value": "3"}]},
            "address": {"details": {"line1": "1 Main St", "city": "London", "country": "GB"}},
            "shipping": {"shippingProperties": [{"name": "Ada L.", "phone": "+44 1", "address": {"details": {"city": "Leeds", "postal_code": "LS1"}}}]}
        }
    });
    let st = run_node(&engine, node(params), json!([{"name": "Ada Lovelace"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/customers"));
    assert_eq!(r.header("content-type"), Some("application/x-www-form-urlencoded"));
    assert_eq!(r.header("authorization"), Some("Bearer sk_test_123"));
    assert_eq!(
        form(r),
        pairs(&[
            ("name", "Ada Lovelace"),
            ("email", "ada@example.com"),
            ("metadata[plan]", "pro"),
            ("metadata[seats]", "3"),
            ("address[line1]", "1 Main St"),
            ("address[city]", "London"),
            ("address[country]", "GB"),
            ("shipping[name]", "Ada L."),
            ("shipping[phone]", "+44 1"),
            ("shipping[address][city]", "Leeds"),
            ("shipping[address][postal_code]", "LS1"),
        ])
    );
    assert_eq!(output(&st), vec![json!({"id": "cus_new", "object": "customer", "name": "Ada Lovelace", "email": "ada@example.com", "metadata": {"plan": "pro"}})]);
}

#[test]
fn customer_get_update_delete_and_a_missing_one() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "get", "customerId": "cus_1"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!((server.take()[0].path.as_str(), output(&st)), ("/v1/customers/cus_1", vec![customer(1)]));

    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "update", "customerId": "cus_1", "updateFields": {"phone": "+1 555"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str(), form(r)), ("POST", "/v1/customers/cus_1", pairs(&[("phone", "+1 555")])));

    // n8n refuses an update without fields before calling Stripe
    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "update", "customerId": "cus_1", "updateFields": {}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(st.error.unwrap().message, "Please enter at least one field to update for the customer.");
    assert!(server.take().is_empty());

    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "delete", "customerId": "cus_1"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].method, "DELETE");
    assert_eq!(output(&st), vec![json!({"id": "cus_1", "object": "customer", "deleted": true})]);

    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "get", "customerId": "cus_404"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.unwrap();
    assert_eq!(e.http_code.as_deref(), Some("404"));
    assert!(e.description.unwrap().contains("No such customer: 'cus_404'"));
}

#[test]
fn lists_page_after_the_last_id_until_has_more_is_false() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "getAll", "returnAll": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let ids: Vec<Value> = output(&st).iter().map(|c| c["id"].clone()).collect();
    assert_eq!(ids, ["cus_1", "cus_2", "cus_3", "cus_4", "cus_5"].map(Value::from).to_vec());
    let seen = server.take();
    let queries: Vec<BTreeMap<String, String>> = seen.iter().map(|r| r.query.clone()).collect();
    assert_eq!(
        queries,
        vec![pairs(&[("limit", "100")]), pairs(&[("limit", "100"), ("starting_after", "cus_2")]), pairs(&[("limit", "100"), ("starting_after", "cus_4")])]
    );

    // A limit stops paging once it is reached.
    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "getAll", "limit": 3})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st).len(), 3);
    assert_eq!(server.take().len(), 2);

    // Filters go into the query.
    let st = run_node(&engine, node(json!({"resource": "customer", "operation": "getAll", "filters": {"email": "c4@example.com"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].query, pairs(&[("limit", "50"), ("email", "c4@example.com")]));
    assert_eq!(output(&st), vec![customer(4)]);

    let st = run_node(&engine, node(json!({"resource": "webhookEndpoint", "returnAll": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take().iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["/v1/webhook_endpoints", "/v1/webhook_endpoints"]);
    assert_eq!(output(&st)[2]["url"], "https://example.com/hook/3");
}

#[test]
fn charges_coupons_cards_tokens_and_balance() {
    let (server, engine) = setup();
    let params = json!({"resource": "charge", "operation": "create", "customerId": "cus_1", "amount": 1999, "currency": "USD", "source": "card_1",
        "additionalFields": {"description": "Order 7", "receipt_email": "ada@example.com"}});
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(
        (r.path.as_str(), form(r)),
        ("/v1/charges", pairs(&[("customer", "cus_1"), ("amount", "1999"), ("currency", "usd"), ("source", "card_1"), ("description", "Order 7"), ("receipt_email", "ada@example.com")]))
    );
    assert_eq!(output(&st)[0]["currency"], "usd");

    for (params, method, path, body) in [
        (json!({"resource": "charge", "operation": "get", "chargeId": "ch_1"}), "GET", "/v1/charges/ch_1", pairs(&[])),
        (json!({"resource": "charge", "operation": "update", "chargeId": "ch_1", "updateFields": {"description": "Paid"}}), "POST", "/v1/charges/ch_1", pairs(&[("description", "Paid")])),
        (json!({"resource": "coupon", "operation": "create", "duration": "forever", "percentOff": 15}), "POST", "/v1/coupons", pairs(&[("duration", "forever"), ("percent_off", "15")])),
        (json!({"resource": "coupon", "operation": "create", "type": "fixedAmount", "amountOff": 500, "currency": "eur"}), "POST", "/v1/coupons", pairs(&[("duration", "once"), ("amount_off", "500"), ("currency", "eur")])),
        (json!({"resource": "customerCard", "operation": "add", "customerId": "cus_1", "token": "tok_1"}), "POST", "/v1/customers/cus_1/sources", pairs(&[("source", "tok_1")])),
        (json!({"resource": "token", "operation": "create", "number": "4242424242424242", "cvc": "314", "expirationMonth": "10", "expirationYear": "2030"}), "POST", "/v1/tokens",
            pairs(&[("card[number]", "4242424242424242"), ("card[cvc]", "314"), ("card[exp_month]", "10"), ("card[exp_year]", "2030")])),
        (json!({}), "GET", "/v1/balance", pairs(&[])),
    ] {
        let st = run_node(&engine, node(params.clone()), json!([{}]));
        assert_eq!(st.status, ExecutionStatus::Success, "{params}: {:?}", st.error);
        let r = &server.take()[0];
        assert_eq!((r.method.as_str(), r.path.as_str(), form(r)), (method, path, body), "{params}");
        assert_eq!(output(&st).len(), 1, "{params}");
    }
    // Creating a source takes two requests: create it, then attach it to the customer; the source is the output.
    let st = run_node(&engine, node(json!({"resource": "source", "operation": "create", "customerId": "cus_1", "type": "wechat", "amount": 100, "currency": "usd", "additionalFields": {"statement_descriptor": "Shop"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.iter().map(|r| (r.method.as_str(), r.path.as_str(), form(r))).collect::<Vec<_>>(), [
        ("POST", "/v1/sources", pairs(&[("type", "wechat"), ("amount", "100"), ("currency", "usd"), ("statement_descriptor", "Shop")])),
        ("POST", "/v1/customers/cus_1/sources", pairs(&[("source", "src_1")])),
    ]);
    assert_eq!(output(&st), [json!({"id": "src_1", "object": "source", "type": "wechat", "amount": 100, "currency": "usd"})]);
}

#[test]
fn the_credential_test_lists_one_charge() {
    let (server, engine) = setup();
    let ok = engine.test_credential("stripeApi", &json!({"id": "s1"}));
    assert!(ok.success, "{}", ok.message);
    let seen = server.take();
    assert_eq!((seen[0].method.as_str(), seen[0].path.as_str(), seen[0].query.get("limit").map(String::as_str)), ("GET", "/v1/charges", Some("1")));
    let wrong = crate::support::engine(&[("stripeApi", json!({"secretKey": "sk_test_nope"}))], &[("https://api.stripe.com", server.base.as_str())]);
    let refused = wrong.test_credential("stripeApi", &json!({"id": "s1"}));
    assert!(!refused.success && refused.message.contains("401"), "{}", refused.message);
}
