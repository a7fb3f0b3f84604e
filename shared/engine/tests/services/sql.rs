//! Postgres and MySQL nodes against real servers: the PostgreSQL and MariaDB
//! that `infra/local/test.sh` starts (`infra/local/databases.sh`), found through
//! `INSTANCE_AI_TEST_POSTGRES` / `INSTANCE_AI_TEST_MYSQL` (`host:port`). Without
//! them these tests print why and pass without running.

use engine::{ExecutionState, ExecutionStatus, Graph, RunOptions};
use serde_json::{json, Value};

use crate::support::{engine, output, run_node};

fn server(var: &str) -> Option<(String, u16)> {
    match std::env::var(var) {
        Ok(v) => {
            let (host, port) = v.rsplit_once(':').expect("host:port");
            Some((host.to_owned(), port.parse().expect("a port")))
        }
        Err(_) => {
            eprintln!("skipped: {var} is not set (infra/local/test.sh starts the database and sets it)");
            None
        }
    }
}

fn pg_credential() -> Option<Value> {
    let (host, port) = server("INSTANCE_AI_TEST_POSTGRES")?;
    Some(json!({"host": host, "port": port, "database": "postgres", "user": "postgres", "password": "pgpass", "ssl": "disable", "maxConnections": 5}))
}

fn my_credential() -> Option<Value> {
    let (host, port) = server("INSTANCE_AI_TEST_MYSQL")?;
    Some(json!({"host": host, "port": port, "database": "n8n", "user": "root", "password": "mypass"}))
}

fn pg(version: f64, parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.postgres", "typeVersion": version, "parameters": parameters, "credentials": {"postgres": {"id": "p1", "name": "Postgres"}}})
}

fn my(version: f64, parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.mySql", "typeVersion": version, "parameters": parameters, "credentials": {"mySql": {"id": "m1", "name": "MySQL"}}})
}

fn ok(st: &ExecutionState) -> Vec<Value> {
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    output(st)
}

fn failed(st: &ExecutionState) -> String {
    assert_eq!(st.status, ExecutionStatus::Error, "expected a failure");
    let e = st.error.clone().unwrap();
    format!("{} | {}", e.message, e.description.unwrap_or_default())
}

fn table(name: &str) -> Value {
    json!({"__rl": true, "mode": "list", "value": name})
}

/// Manual Trigger → the nodes one after another (named N1, N2, …).
fn chain(engine: &engine::Engine, nodes: Vec<Value>) -> ExecutionState {
    let mut all = vec![json!({"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]})];
    let mut connections = serde_json::Map::new();
    let mut previous = "Start".to_owned();
    for (n, mut node) in nodes.into_iter().enumerate() {
        let name = format!("N{}", n + 1);
        node["name"] = json!(name);
        node["position"] = json!([200 * (n + 1), 0]);
        all.push(node);
        connections.insert(previous.clone(), json!({"main": [[{"node": name, "type": "main", "index": 0}]]}));
        previous = name;
    }
    let wf = json!({"nodes": all, "connections": connections, "settings": {"executionOrder": "v1"}});
    engine.run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap().0
}

fn node_json(st: &ExecutionState, node: &str) -> Vec<Value> {
    st.node_output(node, 0).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}

/// Polls `check` for up to two seconds (the server notices a closed connection a moment later).
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..40 {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn postgres_execute_query_with_parameters_and_values_typed_as_node_postgres_types_them() {
    let Some(cred) = pg_credential() else { return };
    let e = engine(&[("postgres", cred)], &[]);
    let exec = |version: f64, query: &str, replacement: &str, input: Value| {
        let mut options = json!({});
        if !replacement.is_empty() {
            options["queryReplacement"] = json!(replacement);
        }
        run_node(&e, pg(version, json!({"operation": "executeQuery", "query": query, "options": options})), input)
    };
    let st = exec(2.6, "DROP TABLE IF EXISTS pg_people; CREATE TABLE pg_people (id serial PRIMARY KEY, name text NOT NULL, age int, balance numeric(10,2), big bigint, active boolean DEFAULT true, tags text[], meta jsonb, born timestamptz, day date)", "", json!([{}]));
    assert_eq!(ok(&st), [json!({"success": true})]);

    // 2.6: each {{ }} resolved to text; JSON stays one value, other text splits at commas
    let hostile = "O'Brien'); DROP TABLE pg_people; --\\";
    let st = exec(2.6, "INSERT INTO pg_people(name, age, meta) VALUES ($1, $2, $3) RETURNING name, age, meta", "={{ $json.name }}, {{ $json.age }}, {{ $json.meta }}", json!([{"name": hostile, "age": 41, "meta": {"a": [1, 2]}}, {"name": "Ada", "age": 36, "meta": {"b": true}}]));
    assert_eq!(ok(&st), [json!({"name": hostile, "age": 41, "meta": {"a": [1, 2]}}), json!({"name": "Ada", "age": 36, "meta": {"b": true}})]);

    // the query's own {{ }} resolved per item; literal values typed as node-postgres types them
    let st = exec(2.6, "UPDATE pg_people SET balance = 12.5, big = 9007199254740993, tags = ARRAY['x','y'], born = '2024-01-02 03:04:05+00', day = '2024-01-02' WHERE name = '{{ $json.who }}' RETURNING id, name, age, balance, big, active, tags, meta, born, day", "", json!([{"who": "Ada"}]));
    let out = ok(&st);
    assert_eq!(out.len(), 1);
    let row = &out[0];
    assert!(row["id"].is_number());
    assert_eq!(row["balance"], json!("12.50"), "numeric as text");
    assert_eq!(row["big"], json!("9007199254740993"), "int8 as text");
    assert_eq!(row["active"], json!(true));
    assert_eq!(row["tags"], json!(["x", "y"]));
    assert_eq!(row["born"], json!("2024-01-02T03:04:05.000Z"));

    // large numbers as numbers when asked
    let st = run_node(&e, pg(2.6, json!({"operation": "executeQuery", "query": "SELECT big, balance FROM pg_people WHERE name = $1", "options": {"queryReplacement": "Ada", "largeNumbersOutput": "numbers"}})), json!([{}]));
    assert_eq!(ok(&st), [json!({"big": 9007199254740992.0, "balance": 12.5})]);

    // 2.4: the raw list split at commas, an expression entry keeps its type
    let st = exec(2.4, "SELECT $1::int + 1 AS next, $2 AS word", "={{ $json.n }}, plain", json!([{"n": 41}]));
    assert_eq!(ok(&st), [json!({"next": 42, "word": "plain"})]);

    // a select with no rows is no items from 2.3, `success` before
    assert_eq!(ok(&exec(2.6, "SELECT * FROM pg_people WHERE age > 100", "", json!([{}]))), Vec::<Value>::new());
    assert_eq!(ok(&exec(2.2, "SELECT * FROM pg_people WHERE age > 100", "", json!([{}]))), [json!({"success": true})]);

    // errors carry the server's message and the failed query
    let msg = failed(&exec(2.6, "SELECT nope FROM pg_people", "", json!([{}])));
    assert!(msg.starts_with("column \"nope\" does not exist | Perhaps you meant"), "the server's message and hint: {msg}");
    let msg = failed(&exec(2.6, "SELEC 1", "", json!([{}])));
    assert!(msg.contains("syntax error at or near \"SELEC\"") && msg.contains("Failed query: SELEC 1"), "{msg}");
    let msg = failed(&exec(2.6, "SELECT $3", "={{ 1 }}", json!([{}])));
    assert!(msg.contains("out of range"), "{msg}");
    assert_eq!(ok(&exec(2.6, "SELECT count(*)::int AS n FROM pg_people", "", json!([{}]))), [json!({"n": 2})], "the table survived the hostile name");
}

#[test]
fn postgres_insert_update_upsert_select_delete_and_query_batching() {
    let Some(cred) = pg_credential() else { return };
    let e = engine(&[("postgres", cred)], &[]);
    let run = |params: Value, input: Value| run_node(&e, pg(2.6, params), input);
    let create = run(json!({"operation": "executeQuery", "query": "DROP TABLE IF EXISTS pg_items; CREATE TABLE pg_items (id int PRIMARY KEY, name text NOT NULL, qty int, tags text[], doc json)"}), json!([{}]));
    ok(&create);
    let auto = json!({"mappingMode": "autoMapInputData", "value": {}, "matchingColumns": [], "schema": []});
    let insert = |input: Value, options: Value| run(json!({"operation": "insert", "schema": {"__rl": true, "mode": "list", "value": "public"}, "table": table("pg_items"), "columns": auto, "options": options}), input);

    let st = insert(json!([{"id": 1, "name": "a", "qty": 1, "tags": ["x", "y z"], "doc": {"k": "it's"}}, {"id": 2, "name": "b", "qty": 2}]), json!({}));
    assert_eq!(ok(&st), [json!({"id": 1, "name": "a", "qty": 1, "tags": ["x", "y z"], "doc": {"k": "it's"}}), json!({"id": 2, "name": "b", "qty": 2, "tags": null, "doc": null})]);
    let msg = failed(&insert(json!([{"id": 9, "name": "n", "nope": 1}]), json!({})));
    assert!(msg.contains("Column 'nope' does not exist in selected table"), "{msg}");
    // output columns and skip on conflict
    let st = insert(json!([{"id": 1, "name": "again"}, {"id": 3, "name": "c", "qty": 3}]), json!({"skipOnConflict": true, "outputColumns": ["id"]}));
    assert_eq!(ok(&st), [json!({"id": 3})]);

    // update: values set on the node, matched on id; a missing row is an error
    let define = |value: Value, matching: Value| json!({"mappingMode": "defineBelow", "value": value, "matchingColumns": matching, "schema": []});
    let st = run(json!({"operation": "update", "table": table("pg_items"), "columns": define(json!({"id": "={{ $json.id }}", "qty": "={{ $json.qty }}"}), json!(["id"]))}), json!([{"id": 1, "qty": 10}]));
    assert_eq!(ok(&st)[0]["qty"], json!(10));
    let msg = failed(&run(json!({"operation": "update", "table": table("pg_items"), "columns": define(json!({"id": 99, "qty": 1}), json!(["id"]))}), json!([{}])));
    assert!(msg.contains("The row you are trying to update doesn't exist") && msg.contains("id=99"), "{msg}");

    // upsert: an existing key updates, a new one inserts
    let st = run(json!({"operation": "upsert", "table": table("pg_items"), "columns": {"mappingMode": "autoMapInputData", "value": {}, "matchingColumns": ["id"], "schema": []}}), json!([{"id": 2, "name": "bb", "qty": 20}, {"id": 4, "name": "d", "qty": 4}]));
    assert_eq!(ok(&st).iter().map(|r| (r["id"].clone(), r["name"].clone())).collect::<Vec<_>>(), [(json!(2), json!("bb")), (json!(4), json!("d"))]);

    // a transaction: the duplicate key rolls back the row before it
    let msg = failed(&insert(json!([{"id": 5, "name": "e"}, {"id": 1, "name": "dup"}]), json!({"queryBatching": "transaction"})));
    assert!(msg.contains("duplicate key value violates unique constraint"), "{msg}");
    // independently, continuing on failure: the good row stays, the bad one is an error item
    let mut n = pg(2.6, json!({"operation": "insert", "table": table("pg_items"), "columns": auto, "options": {"queryBatching": "independently"}}));
    n["onError"] = json!("continueRegularOutput");
    let out = ok(&run_node(&e, n, json!([{"id": 6, "name": "f"}, {"id": 1, "name": "dup"}])));
    assert_eq!(out[0]["id"], json!(6));
    assert!(out[1]["message"].as_str().unwrap().contains("duplicate key"), "{out:?}");
    assert_eq!(out[1]["item"], json!({"id": 1, "name": "dup"}));

    // select: conditions, sort, limit
    let select = |where_: Value, combine: &str, sort: Value, limit: Option<u64>| {
        let mut p = json!({"operation": "select", "table": table("pg_items"), "where": {"values": where_}, "combineConditions": combine, "sort": {"values": sort}, "options": {"outputColumns": ["id", "name"]}});
        match limit {
            Some(l) => p["limit"] = json!(l),
            None => p["returnAll"] = json!(true),
        }
        ok(&run(p, json!([{}])))
    };
    let ids = |rows: Vec<Value>| rows.iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(select(json!([]), "AND", json!([{"column": "id", "direction": "DESC"}]), None)), [6, 4, 3, 2, 1], "the transaction left no row 5");
    assert_eq!(ids(select(json!([{"column": "qty", "condition": ">=", "value": "4"}]), "AND", json!([{"column": "id", "direction": "ASC"}]), Some(2))), [1, 2]);
    assert_eq!(ids(select(json!([{"column": "name", "condition": "LIKE", "value": "b%"}, {"column": "qty", "condition": "IS NULL"}]), "OR", json!([{"column": "id", "direction": "ASC"}]), None)), [2, 6]);
    assert_eq!(select(json!([{"column": "id", "value": 3}]), "AND", json!([]), Some(50)), [json!({"id": 3, "name": "c"})]);
    let msg = failed(&run(json!({"operation": "select", "table": table("pg_items"), "where": {"values": [{"column": "qty", "condition": ">", "value": "lots"}]}, "returnAll": true}), json!([{}])));
    assert!(msg.contains("is not a number"), "{msg}");

    // delete rows, truncate, drop
    let st = run(json!({"operation": "deleteTable", "table": table("pg_items"), "deleteCommand": "delete", "where": {"values": [{"column": "id", "condition": ">", "value": 3}]}}), json!([{}]));
    assert_eq!(ok(&st), [json!({"success": true})]);
    assert_eq!(ids(select(json!([]), "AND", json!([{"column": "id", "direction": "ASC"}]), None)), [1, 2, 3]);
    ok(&run(json!({"operation": "deleteTable", "table": table("pg_items"), "deleteCommand": "truncate"}), json!([{}])));
    assert!(select(json!([]), "AND", json!([]), None).is_empty());
    ok(&run(json!({"operation": "deleteTable", "table": table("pg_items"), "deleteCommand": "drop"}), json!([{}])));
    assert!(failed(&run(json!({"operation": "select", "table": table("pg_items"), "returnAll": true}), json!([{}]))).contains("does not exist"));
}

#[test]
fn postgres_2_0_data_modes_and_match_columns() {
    let Some(cred) = pg_credential() else { return };
    let e = engine(&[("postgres", cred)], &[]);
    let run = |params: Value, input: Value| run_node(&e, pg(2.0, params), input);
    ok(&run(json!({"operation": "executeQuery", "query": "DROP TABLE IF EXISTS pg_old; CREATE TABLE pg_old (id int PRIMARY KEY, name text)"}), json!([{}])));
    let st = run(json!({"operation": "insert", "table": table("pg_old"), "dataMode": "defineBelow", "valuesToSend": {"values": [{"column": "id", "value": "={{ $json.n }}"}, {"column": "name", "value": "one"}]}}), json!([{"n": 1}]));
    assert_eq!(ok(&st), [json!({"id": 1, "name": "one"})]);
    let st = run(json!({"operation": "update", "table": table("pg_old"), "dataMode": "autoMapInputData", "columnToMatchOn": "id"}), json!([{"id": 1, "name": "uno"}]));
    assert_eq!(ok(&st), [json!({"id": 1, "name": "uno"})]);
    let msg = failed(&run(json!({"operation": "update", "table": table("pg_old"), "dataMode": "autoMapInputData", "columnToMatchOn": "id"}), json!([{"name": "x"}])));
    assert!(msg.contains("Column to match on not found in input item"), "{msg}");
    let st = run(json!({"operation": "upsert", "table": table("pg_old"), "dataMode": "defineBelow", "columnToMatchOn": "id", "valueToMatchOn": "2", "valuesToSend": {"values": [{"column": "name", "value": "two"}]}}), json!([{}]));
    assert_eq!(ok(&st), [json!({"id": 2, "name": "two"})]);
    ok(&run(json!({"operation": "executeQuery", "query": "DROP TABLE pg_old"}), json!([{}])));
}

#[test]
fn postgres_one_pool_per_execution_closed_when_it_ends_and_the_credential_test() {
    let Some(cred) = pg_credential() else { return };
    let e = engine(&[("postgres", cred.clone())], &[]);
    let pid = json!({"operation": "executeQuery", "query": "SELECT pg_backend_pid() AS pid"});
    let st = chain(&e, vec![pg(2.6, pid.clone()), pg(2.6, pid)]);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let (a, b) = (node_json(&st, "N1")[0]["pid"].clone(), node_json(&st, "N2")[0]["pid"].clone());
    assert_eq!(a, b, "the second node reuses the execution's connection");
    let alive = || ok(&run_node(&e, pg(2.6, json!({"operation": "executeQuery", "query": format!("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = {a}")})), json!([{}])))[0]["n"] == json!(0);
    assert!(eventually(alive), "the connection closed with the execution");

    let t = e.test_credential("postgres", &json!({"id": "p1"}));
    assert!(t.success, "{}", t.message);
    let mut wrong = cred.clone();
    wrong["password"] = json!("nope");
    let t = engine(&[("postgres", wrong)], &[]).test_credential("postgres", &json!({"id": "p1"}));
    assert!(!t.success && t.message.contains("password authentication failed"), "{}", t.message);

    // the outbound guard: a private address is refused unless allowed, before any connection
    let guarded = engine::Engine::new(engine::EngineSettings::default(), engine::Host { credentials: Some(std::sync::Arc::new(crate::support::Creds([("postgres".to_owned(), cred.clone())].into()))), ..Default::default() });
    let msg = failed(&run_node(&guarded, pg(2.6, json!({"operation": "executeQuery", "query": "SELECT 1"})), json!([{}])));
    assert!(msg.to_lowercase().contains("private") || msg.to_lowercase().contains("not allowed"), "{msg}");
    assert!(!guarded.test_credential("postgres", &json!({"id": "p1"})).success);
    let mut tunnel = cred;
    tunnel["sshTunnel"] = json!(true);
    let msg = failed(&run_node(&engine(&[("postgres", tunnel)], &[]), pg(2.6, json!({"operation": "executeQuery", "query": "SELECT 1"})), json!([{}])));
    assert!(msg.contains("SSH tunnels are not supported yet"), "{msg}");
}

#[test]
fn mysql_execute_query_with_parameters_and_values_typed_as_mysql2_types_them() {
    let Some(cred) = my_credential() else { return };
    let e = engine(&[("mySql", cred)], &[]);
    let exec = |version: f64, query: &str, replacement: Value, input: Value| {
        run_node(&e, my(version, json!({"operation": "executeQuery", "query": query, "options": {"queryReplacement": replacement}})), input)
    };
    let st = exec(2.5, "DROP TABLE IF EXISTS my_people; CREATE TABLE my_people (id int AUTO_INCREMENT PRIMARY KEY, name varchar(100) NOT NULL, age int, big bigint, price decimal(10,2), meta json, born datetime, active tinyint(1) DEFAULT 1)", json!(""), json!([{}]));
    assert_eq!(ok(&st), [json!({"success": true})]);

    // $n placeholders become ?, values escaped; one statement per item, sent together
    let hostile = "O'Brien\\'); DROP TABLE my_people; --";
    let st = exec(2.5, "INSERT INTO my_people (name, age, big, price, born) VALUES ($1, $2, 9007199254740993, 12.5, '2024-01-02 03:04:05')", json!("={{ $json.name }},{{ $json.age }}"), json!([{"name": hostile, "age": 41}, {"name": "Ada", "age": 36}]));
    assert_eq!(ok(&st), [json!({"success": true})]);
    let st = exec(2.5, "SELECT id, name, age, big, price, meta, born, active FROM $1:name WHERE age > $2 AND name <> '$2' ORDER BY id", json!("my_people, 30"), json!([{}]));
    let out = ok(&st);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["name"], json!(hostile));
    assert_eq!(out[0]["age"], json!(41));
    assert_eq!(out[0]["big"], json!("9007199254740993"), "BIGINT as text");
    assert_eq!(out[0]["price"], json!("12.50"), "DECIMAL as text");
    assert_eq!(out[0]["born"], json!("2024-01-02 03:04:05"), "dates as the server writes them (2.1+)");
    assert_eq!(out[0]["active"], json!(1));
    assert_eq!(out[0]["meta"], Value::Null);
    let st = run_node(&e, my(2.5, json!({"operation": "executeQuery", "query": "SELECT big FROM my_people WHERE name = $1", "options": {"queryReplacement": "Ada", "largeNumbersOutput": "numbers"}})), json!([{}]));
    assert_eq!(ok(&st), [json!({"big": 9007199254740992.0})]);

    // a select without rows: no items from 2.2, `success` before
    assert_eq!(ok(&exec(2.5, "SELECT * FROM my_people WHERE age > 100", json!(""), json!([{}]))), Vec::<Value>::new());
    assert_eq!(ok(&exec(2.1, "SELECT * FROM my_people WHERE age > 100", json!(""), json!([{}]))), [json!({"success": true})]);
    let msg = failed(&exec(2.5, "SELECT nope FROM my_people", json!(""), json!([{}])));
    assert!(msg.contains("Unknown column 'nope'"), "{msg}");
    let msg = failed(&exec(2.5, "SELECT $4", json!("1"), json!([{}])));
    assert!(msg.contains("Parameter $4 referenced in query"), "{msg}");
    assert_eq!(ok(&exec(2.5, "SELECT COUNT(*) AS n FROM my_people", json!(""), json!([{}]))), [json!({"n": "2"})], "the table survived the hostile name (COUNT is a BIGINT: text)");
}

#[test]
fn mysql_insert_update_upsert_select_delete_and_query_batching() {
    let Some(cred) = my_credential() else { return };
    let e = engine(&[("mySql", cred.clone())], &[]);
    let run = |params: Value, input: Value| run_node(&e, my(2.5, params), input);
    ok(&run(json!({"operation": "executeQuery", "query": "DROP TABLE IF EXISTS my_items; CREATE TABLE my_items (id int PRIMARY KEY, name varchar(50) NOT NULL, qty int)"}), json!([{}])));
    let insert = |input: Value, options: Value| run(json!({"operation": "insert", "table": table("my_items"), "dataMode": "autoMapInputData", "options": options}), input);
    // one INSERT for every item ("multiple"), answered with `success`
    assert_eq!(ok(&insert(json!([{"id": 1, "name": "a", "qty": 1}, {"id": 2, "name": "b", "qty": 2}]), json!({}))), [json!({"success": true})]);
    let st = run(json!({"operation": "insert", "table": table("my_items"), "dataMode": "defineBelow", "valuesToSend": {"values": [{"column": "id", "value": "={{ $json.n }}"}, {"column": "name", "value": "c"}]}, "options": {"queryBatching": "independently"}}), json!([{"n": 3}]));
    assert_eq!(ok(&st), [json!({"success": true})]);

    assert_eq!(ok(&run(json!({"operation": "update", "table": table("my_items"), "dataMode": "autoMapInputData", "columnToMatchOn": "id"}), json!([{"id": 1, "qty": 10}]))), [json!({"success": true})]);
    assert_eq!(ok(&run(json!({"operation": "upsert", "table": table("my_items"), "dataMode": "autoMapInputData", "columnToMatchOn": "id"}), json!([{"id": 2, "name": "bb", "qty": 20}, {"id": 4, "name": "d", "qty": 4}]))), [json!({"success": true})]);

    // a transaction rolls back; independently with continue on fail keeps the good row
    let msg = failed(&insert(json!([{"id": 5, "name": "e"}, {"id": 1, "name": "dup"}]), json!({"queryBatching": "transaction"})));
    assert!(msg.contains("Duplicate entry '1'"), "{msg}");
    let mut n = my(2.5, json!({"operation": "insert", "table": table("my_items"), "dataMode": "autoMapInputData", "options": {"queryBatching": "independently"}}));
    n["onError"] = json!("continueRegularOutput");
    let out = ok(&run_node(&e, n, json!([{"id": 6, "name": "f"}, {"id": 1, "name": "dup"}])));
    assert_eq!(out[0], json!({"success": true}));
    assert!(out[1]["message"].as_str().unwrap().contains("Duplicate entry"), "{out:?}");

    let select = |where_: Value, options: Value, sort: Value, limit: Option<u64>| {
        let mut p = json!({"operation": "select", "table": table("my_items"), "where": {"values": where_}, "sort": {"values": sort}, "options": options});
        match limit {
            Some(l) => p["limit"] = json!(l),
            None => p["returnAll"] = json!(true),
        }
        ok(&run(p, json!([{}])))
    };
    let ids = |rows: Vec<Value>| rows.iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(select(json!([]), json!({}), json!([{"column": "id", "direction": "DESC"}]), None)), [6, 4, 3, 2, 1], "no row 5");
    assert_eq!(ids(select(json!([{"column": "qty", "condition": ">", "value": 3}]), json!({}), json!([{"column": "qty", "direction": "ASC"}]), Some(2))), [4, 1]);
    assert_eq!(ids(select(json!([{"column": "name", "condition": "LIKE", "value": "b%"}, {"column": "qty", "condition": "IS NULL"}]), json!({"combineConditions": "OR"}), json!([{"column": "id", "direction": "ASC"}]), None)), [2, 3, 6]);
    assert_eq!(select(json!([{"column": "id", "value": "2"}]), json!({"outputColumns": ["name", "qty"]}), json!([]), Some(5)), [json!({"name": "bb", "qty": 20})]);

    assert_eq!(ok(&run(json!({"operation": "deleteTable", "table": table("my_items"), "deleteCommand": "delete", "where": {"values": [{"column": "id", "condition": ">=", "value": 4}]}}), json!([{}]))), [json!({"success": true})]);
    assert_eq!(ids(select(json!([]), json!({}), json!([{"column": "id", "direction": "ASC"}]), None)), [1, 2, 3]);
    ok(&run(json!({"operation": "deleteTable", "table": table("my_items"), "deleteCommand": "drop"}), json!([{}])));

    // one pool per execution, closed when it ends
    let id = json!({"operation": "executeQuery", "query": "SELECT CONNECTION_ID() AS id"});
    let st = chain(&e, vec![my(2.5, id.clone()), my(2.5, id)]);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let (a, b) = (node_json(&st, "N1")[0]["id"].clone(), node_json(&st, "N2")[0]["id"].clone());
    assert_eq!(a, b, "the second node reuses the execution's connection");
    let gone = || ok(&run(json!({"operation": "executeQuery", "query": format!("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = {a}")}), json!([{}])))[0]["n"] == json!("0");
    assert!(eventually(gone), "the connection closed with the execution");

    // the credential test
    assert!(e.test_credential("mySql", &json!({"id": "m1"})).success);
    let mut wrong = cred;
    wrong["password"] = json!("nope");
    let t = engine(&[("mySql", wrong)], &[]).test_credential("mySql", &json!({"id": "m1"}));
    assert!(!t.success && t.message.contains("Access denied"), "{}", t.message);
}
