//! `infra/template.yaml` agrees with the deployment definition the local
//! cloud runs from: same tables, queues, routes, event sources, variables
//! and IAM grants. Checked on the parsed YAML, not only by re-rendering.

use serde_yaml::Value;
use std::collections::BTreeSet;
use store::deployment::{Access, Edge, FUNCTIONS, QUEUES, ROUTES, TABLES, WS_ROUTES};

fn template_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../template.yaml")
}

fn template() -> Value {
    let text = std::fs::read_to_string(template_path()).expect("infra/template.yaml exists");
    serde_yaml::from_str(&text).expect("template is YAML")
}

fn resources(t: &Value) -> &serde_yaml::Mapping {
    t["Resources"].as_mapping().expect("Resources")
}

fn refs(v: &Value) -> Option<String> {
    v.get("Ref").and_then(Value::as_str).map(str::to_owned)
}

#[test]
fn checked_in_template_is_the_rendering_of_the_definition() {
    let on_disk = std::fs::read_to_string(template_path()).unwrap();
    assert!(
        on_disk == local_cloud::sam_template::render(),
        "infra/template.yaml is stale: run `cargo run -p local-cloud -- template > infra/template.yaml`"
    );
}

/// CloudFormation and cfn-lint read YAML 1.1, where a bare `OFF` or `yes`
/// is a boolean: every such word is quoted (the sweep schedule's `Mode: OFF`).
#[test]
fn no_value_reads_as_a_boolean_in_yaml_1_1() {
    let text = std::fs::read_to_string(template_path()).unwrap();
    let bare: Vec<&str> = text
        .lines()
        .filter(|l| l.rsplit_once(": ").map(|(_, v)| v).or_else(|| l.trim_start().strip_prefix("- ")).is_some_and(|v| ["y", "n", "yes", "no", "on", "off"].contains(&v.to_ascii_lowercase().as_str())))
        .collect();
    assert!(bare.is_empty(), "{bare:?}");
    assert!(text.contains("Mode: 'OFF'"), "the sweep schedule's flexible window stays off");
}

#[test]
fn every_table_and_queue_is_declared_with_its_keys_and_redrive() {
    let t = template();
    let res = resources(&t);
    for table in TABLES {
        let r = &res[table.logical_id];
        assert_eq!(r["Type"], "AWS::DynamoDB::Table", "{}", table.logical_id);
        let keys = r["Properties"]["KeySchema"].as_sequence().unwrap();
        assert_eq!(keys[0]["AttributeName"], table.partition_key.0);
        assert_eq!(keys.len(), 1 + usize::from(table.sort_key.is_some()));
        if let Some(ttl) = table.ttl_attribute {
            assert_eq!(r["Properties"]["TimeToLiveSpecification"]["AttributeName"], ttl);
        }
    }
    for q in QUEUES {
        let r = &res[q.logical_id];
        assert_eq!(r["Type"], "AWS::SQS::Queue");
        let redrive = &r["Properties"]["RedrivePolicy"];
        assert_eq!(redrive["deadLetterTargetArn"]["Fn::GetAtt"][0], q.dlq_logical_id);
        assert_eq!(redrive["maxReceiveCount"].as_u64(), Some(u64::from(q.max_receive_count)));
        assert_eq!(res[q.dlq_logical_id]["Type"], "AWS::SQS::Queue");
    }
}

#[test]
fn every_function_has_its_routes_sources_variables_and_only_its_grants() {
    let t = template();
    let res = resources(&t);
    for f in FUNCTIONS {
        let r = &res[f.logical_id];
        assert_eq!(r["Type"], "AWS::Serverless::Function", "{}", f.logical_id);
        assert_eq!(r["Metadata"]["BuildMethod"], "rust-cargolambda");
        assert_eq!(r["Metadata"]["BuildProperties"]["Binary"], f.package);
        let props = &r["Properties"];

        // Routes.
        let events = props["Events"].as_mapping().cloned().unwrap_or_default();
        let http: BTreeSet<(String, String)> = events
            .values()
            .filter(|e| e["Type"] == "HttpApi")
            .map(|e| (e["Properties"]["Method"].as_str().unwrap().to_owned(), e["Properties"]["Path"].as_str().unwrap().to_owned()))
            .collect();
        let want: BTreeSet<(String, String)> = ROUTES
            .iter()
            .filter(|r| r.function == f.id && r.edge == Edge::HttpApi)
            .map(|r| (r.method.as_str().to_owned(), r.path.to_owned()))
            .collect();
        assert_eq!(http, want, "{} routes", f.logical_id);
        let streams = ROUTES.iter().any(|r| r.function == f.id && r.edge == Edge::StreamingUrl);
        assert_eq!(props["FunctionUrlConfig"]["InvokeMode"] == "RESPONSE_STREAM", streams, "{}", f.logical_id);

        // Queue consumers report partial batch failures.
        let sqs: BTreeSet<String> = events
            .values()
            .filter(|e| e["Type"] == "SQS")
            .map(|e| {
                assert_eq!(e["Properties"]["FunctionResponseTypes"][0], "ReportBatchItemFailures");
                e["Properties"]["Queue"]["Fn::GetAtt"][0].as_str().unwrap().to_owned()
            })
            .collect();
        let want: BTreeSet<String> = f.consumes.iter().map(|q| q.def().logical_id.to_owned()).collect();
        assert_eq!(sqs, want, "{} queues", f.logical_id);

        // Variables name exactly the resources the function uses.
        let vars: BTreeSet<String> = props["Environment"]["Variables"]
            .as_mapping()
            .map(|m| m.keys().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        for access in f.tables {
            assert!(vars.contains(access.table.def().env), "{} lacks {}", f.logical_id, access.table.def().env);
        }
        let table_vars: BTreeSet<&str> = vars.iter().map(String::as_str).filter(|v| v.ends_with("_TABLE")).collect();
        assert_eq!(table_vars.len(), f.tables.len(), "{}: {table_vars:?}", f.logical_id);

        // IAM: a read-only table gets the read policy, never CRUD; no other table is granted.
        let policies = props["Policies"].as_sequence().unwrap();
        let mut granted = BTreeSet::new();
        for p in policies {
            for (kind, access) in [("DynamoDBReadPolicy", Access::Read), ("DynamoDBCrudPolicy", Access::ReadWrite)] {
                if let Some(table) = refs(&p[kind]["TableName"]) {
                    let declared = f.tables.iter().find(|a| a.table.def().logical_id == table);
                    assert_eq!(declared.map(|a| a.access), Some(access), "{} {kind} on {table}", f.logical_id);
                    granted.insert(table);
                }
            }
        }
        assert_eq!(granted.len(), f.tables.len(), "{} grants {granted:?}", f.logical_id);
        let manages = policies.iter().any(|p| {
            p["Statement"].as_sequence().is_some_and(|s| s.iter().any(|st| st["Action"][0] == "execute-api:ManageConnections"))
        });
        assert_eq!(manages, f.manages_connections, "{} ManageConnections", f.logical_id);
    }
}

#[test]
fn websocket_routes_all_reach_the_gateway() {
    let t = template();
    let res = resources(&t);
    let keys: BTreeSet<String> = res
        .values()
        .filter(|r| r["Type"] == "AWS::ApiGatewayV2::Route")
        .map(|r| r["Properties"]["RouteKey"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys, WS_ROUTES.iter().map(|s| s.to_string()).collect());
}

#[test]
fn every_function_crate_is_deployed_and_every_deployed_function_has_a_crate() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../functions");
    let crates: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let defined: BTreeSet<String> = FUNCTIONS.iter().map(|f| f.package.to_owned()).collect();
    assert_eq!(crates, defined);
}

#[test]
fn only_schedule_managers_manage_schedules_and_the_scheduler_may_only_send_ticks() {
    use store::deployment::{FunctionId, SCHEDULE_MANAGERS};
    let t = template();
    let res = resources(&t);
    assert_eq!(res["ScheduleGroup"]["Type"], "AWS::Scheduler::ScheduleGroup");
    let role = &res["SchedulerRole"];
    assert_eq!(role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["Service"], "scheduler.amazonaws.com");
    let stmt = &role["Properties"]["Policies"][0]["PolicyDocument"]["Statement"][0];
    assert_eq!((stmt["Action"].as_str(), stmt["Resource"]["Fn::GetAtt"][0].as_str()), (Some("sqs:SendMessage"), Some("RunsQueue")));
    for f in FUNCTIONS {
        let props = &res[f.logical_id]["Properties"];
        let statements: Vec<&Value> =
            props["Policies"].as_sequence().unwrap().iter().filter_map(|p| p["Statement"].as_sequence()).flatten().collect();
        let creates = statements.iter().any(|s| s["Action"].as_sequence().is_some_and(|a| a.iter().any(|x| x == "scheduler:CreateSchedule")));
        let passes = statements.iter().any(|s| s["Action"][0] == "iam:PassRole" && s["Resource"]["Fn::GetAtt"][0] == "SchedulerRole");
        let manager = SCHEDULE_MANAGERS.contains(&f.id);
        assert_eq!((creates, passes), (manager, manager), "{} scheduler grants", f.logical_id);
        let vars = &props["Environment"]["Variables"];
        assert_eq!(vars.get("SCHEDULER_GROUP").is_some(), manager, "{} SCHEDULER_GROUP", f.logical_id);
        assert_eq!(vars.get("INSTANCE_AI_PUBLIC_URL").is_some(), f.id == FunctionId::Executor, "{} public URL", f.logical_id);
    }
    // Webhook routes take every method and the rest of the path.
    let hooks = &res["WebhookFunction"]["Properties"]["Events"];
    let paths: BTreeSet<&str> = hooks.as_mapping().unwrap().values().filter_map(|e| e["Properties"]["Path"].as_str()).collect();
    for p in ["/webhook/{proxy+}", "/webhook-test/{proxy+}", "/webhook-waiting/{proxy+}", "/form/{proxy+}", "/form-test/{proxy+}", "/form-waiting/{proxy+}"] {
        assert!(paths.contains(p), "{p}");
    }
    assert!(hooks.as_mapping().unwrap().values().all(|e| e["Properties"]["Method"] == "ANY"));
}
