//! Renders `infra/template.yaml` (AWS SAM) from `store::deployment`.
//!
//! The template is this rendering, checked in: `cargo run -p local-cloud --
//! template > infra/template.yaml` regenerates it, and a test fails when the
//! checked-in file and the definition drift. Long-form intrinsics
//! (`Fn::GetAtt`, `Ref`) keep it plain YAML for every parser.

use serde_json::{json, Map, Value};
use store::deployment::{
    Access, Edge, FunctionDef, KeyType, QueueId, TableDef, TableId, FUNCTIONS, PUBLIC_URL_FUNCTIONS, QUEUES, ROUTES,
    SCHEDULES, SCHEDULE_MANAGERS, SWEEP_ARMERS, TABLES, WS_CLIENT_FUNCTIONS, WS_FUNCTION, WS_ROUTES,
};

fn r#ref(logical: &str) -> Value {
    json!({ "Ref": logical })
}

fn get_att(logical: &str, attr: &str) -> Value {
    json!({ "Fn::GetAtt": [logical, attr] })
}

fn sub(s: &str) -> Value {
    json!({ "Fn::Sub": s })
}

fn key_type(t: KeyType) -> &'static str {
    match t {
        KeyType::S => "S",
        KeyType::N => "N",
    }
}

fn table(def: &TableDef) -> Value {
    let mut attrs = vec![json!({"AttributeName": def.partition_key.0, "AttributeType": key_type(def.partition_key.1)})];
    let mut keys = vec![json!({"AttributeName": def.partition_key.0, "KeyType": "HASH"})];
    if let Some((sk, t)) = def.sort_key {
        attrs.push(json!({"AttributeName": sk, "AttributeType": key_type(t)}));
        keys.push(json!({"AttributeName": sk, "KeyType": "RANGE"}));
    }
    let mut props = Map::new();
    props.insert("BillingMode".into(), json!("PAY_PER_REQUEST"));
    let mut indexes = Vec::new();
    for (name, pk, sk) in def.indexes {
        attrs.push(json!({"AttributeName": pk, "AttributeType": "S"}));
        attrs.push(json!({"AttributeName": sk, "AttributeType": "S"}));
        indexes.push(json!({
            "IndexName": name,
            "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"},
        }));
    }
    props.insert("AttributeDefinitions".into(), Value::Array(attrs));
    props.insert("KeySchema".into(), Value::Array(keys));
    if !indexes.is_empty() {
        props.insert("GlobalSecondaryIndexes".into(), Value::Array(indexes));
    }
    if let Some(ttl) = def.ttl_attribute {
        props.insert("TimeToLiveSpecification".into(), json!({"AttributeName": ttl, "Enabled": true}));
    }
    props.insert("PointInTimeRecoverySpecification".into(), json!({"PointInTimeRecoveryEnabled": true}));
    props.insert("SSESpecification".into(), json!({"SSEEnabled": true}));
    json!({"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain", "Properties": props})
}

fn ws_management_url() -> Value {
    sub("https://${WebSocketApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${Stage}")
}

fn function(def: &FunctionDef) -> Value {
    let mut env = Map::new();
    let mut policies = Vec::new();
    for access in def.tables {
        let t = access.table.def();
        env.insert(t.env.into(), r#ref(t.logical_id));
        let policy = match access.access {
            Access::Read => "DynamoDBReadPolicy",
            Access::ReadWrite => "DynamoDBCrudPolicy",
        };
        policies.push(json!({ policy: {"TableName": r#ref(t.logical_id)} }));
    }
    let queue_env = |q: QueueId, env: &mut Map<String, Value>| {
        let qd = q.def();
        env.insert(qd.env.into(), r#ref(qd.logical_id));
    };
    for &q in def.sends_to {
        queue_env(q, &mut env);
        policies.push(json!({"SQSSendMessagePolicy": {"QueueName": get_att(q.def().logical_id, "QueueName")}}));
    }
    for &q in def.consumes {
        // The SQS event source adds the receive/delete permissions.
        queue_env(q, &mut env);
    }
    for &q in def.inspects {
        queue_env(q, &mut env);
        policies.push(json!({"Statement": [{
            "Effect": "Allow",
            "Action": ["sqs:GetQueueAttributes"],
            "Resource": get_att(q.def().logical_id, "Arn"),
        }]}));
    }
    if def.manages_connections {
        env.insert("WS_MANAGEMENT_URL".into(), ws_management_url());
        policies.push(json!({"Statement": [{
            "Effect": "Allow",
            "Action": ["execute-api:ManageConnections"],
            "Resource": sub("arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/*"),
        }]}));
    }
    if WS_CLIENT_FUNCTIONS.contains(&def.id) {
        // A client of the WebSocket API like any browser: no IAM grant.
        env.insert("WS_API_URL".into(), sub("wss://${WebSocketApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${Stage}"));
    }
    if def.uses_kms {
        env.insert("INSTANCE_AI_KMS_KEY_ID".into(), r#ref("CredentialsKey"));
        policies.push(json!({"Statement": [{
            "Effect": "Allow",
            "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
            "Resource": get_att("CredentialsKey", "Arn"),
        }]}));
    }
    if SCHEDULE_MANAGERS.contains(&def.id) {
        let runs = QueueId::Runs.def().logical_id;
        env.insert("SCHEDULER_GROUP".into(), r#ref("ScheduleGroup"));
        env.insert("SCHEDULER_ROLE_ARN".into(), get_att("SchedulerRole", "Arn"));
        env.insert("RUNS_QUEUE_ARN".into(), get_att(runs, "Arn"));
        policies.push(json!({"Statement": [
            {
                "Effect": "Allow",
                "Action": ["scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule"],
                "Resource": sub("arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/${ScheduleGroup}/*"),
            },
            {
                "Effect": "Allow",
                "Action": ["iam:PassRole"],
                "Resource": get_att("SchedulerRole", "Arn"),
                "Condition": {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
            },
        ]}));
    }
    if SWEEP_ARMERS.contains(&def.id) {
        // Turns the sweep's schedule on (and the sweep, off): UpdateSchedule
        // passes the schedule's role along.
        env.insert("SWEEP_SCHEDULE".into(), sub(SWEEP_SCHEDULE_NAME));
        policies.push(json!({"Statement": [
            {
                "Effect": "Allow",
                "Action": ["scheduler:GetSchedule", "scheduler:UpdateSchedule"],
                "Resource": sub(&format!("arn:${{AWS::Partition}}:scheduler:${{AWS::Region}}:${{AWS::AccountId}}:schedule/default/{SWEEP_SCHEDULE_NAME}")),
            },
            {
                "Effect": "Allow",
                "Action": ["iam:PassRole"],
                "Resource": get_att("SweepScheduleRole", "Arn"),
                "Condition": {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
            },
        ]}));
    }
    if PUBLIC_URL_FUNCTIONS.contains(&def.id) {
        env.insert(
            "INSTANCE_AI_PUBLIC_URL".into(),
            json!({"Fn::If": ["HasPublicUrl", r#ref("PublicUrl"), sub("https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}")]}),
        );
    }
    if def.calls_model {
        env.insert("INSTANCE_AI_MODEL".into(), r#ref("ModelProvider"));
        env.insert("INSTANCE_AI_MAX_STEPS".into(), r#ref("MaxStepsPerRun"));
        // The provider's API key, resolved from Secrets Manager at deploy
        // time; each provider reads only its own variable.
        let secret = json!({"Fn::If": ["HasModelApiKeySecret", sub("{{resolve:secretsmanager:${ModelApiKeySecret}}}"), r#ref("AWS::NoValue")]});
        env.insert("ANTHROPIC_API_KEY".into(), secret.clone());
        env.insert("OPENAI_API_KEY".into(), secret);
        policies.push(json!({"Statement": [{
            "Effect": "Allow",
            "Action": ["bedrock:InvokeModelWithResponseStream", "bedrock:InvokeModel"],
            "Resource": "*",
        }]}));
    }

    if ROUTES.iter().any(|r| r.function == def.id && r.path == "/mcp") {
        env.insert("INSTANCE_AI_ALLOWED_ORIGINS".into(), r#ref("AllowedOrigins"));
    }
    if ROUTES.iter().any(|r| r.function == def.id && r.edge == Edge::StreamingUrl) {
        env.insert("INSTANCE_AI_WEB_ORIGIN".into(), r#ref("WebOrigin"));
    }
    if ROUTES.iter().any(|r| r.function == def.id && (r.path == "/" || r.path == "/webhook/{proxy+}")) {
        // The page connects to the SSE Function URL (another origin); a
        // hosted chat page posts to the streaming webhook URLs there.
        if let Some(sse) = ROUTES.iter().find(|r| r.edge == Edge::StreamingUrl) {
            env.insert("INSTANCE_AI_EVENTS_URL".into(), get_att(&format!("{}Url", sse.function.def().logical_id), "FunctionUrl"));
        }
    }

    let mut events = Map::new();
    for (i, route) in ROUTES.iter().filter(|r| r.function == def.id && r.edge == Edge::HttpApi).enumerate() {
        events.insert(
            format!("Http{i}"),
            json!({"Type": "HttpApi", "Properties": {"ApiId": r#ref("HttpApi"), "Method": route.method.as_str(), "Path": route.path}}),
        );
    }
    for q in QUEUES.iter().filter(|q| q.consumer == def.id) {
        events.insert(
            q.logical_id.to_owned(),
            json!({"Type": "SQS", "Properties": {
                "Queue": get_att(q.logical_id, "Arn"),
                "BatchSize": q.batch_size,
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
            }}),
        );
    }

    let mut props = Map::new();
    props.insert("CodeUri".into(), json!(".."));
    props.insert("Handler".into(), json!("bootstrap"));
    props.insert("Description".into(), json!(format!("{} (functions/{})", def.logical_id, def.package)));
    props.insert("MemorySize".into(), json!(def.memory_mb));
    props.insert("Timeout".into(), json!(def.timeout_secs));
    if !env.is_empty() {
        props.insert("Environment".into(), json!({"Variables": env}));
    }
    props.insert("Policies".into(), Value::Array(policies));
    if !events.is_empty() {
        props.insert("Events".into(), Value::Object(events));
    }
    if ROUTES.iter().any(|r| r.function == def.id && r.edge == Edge::StreamingUrl) {
        // HTTP APIs cannot stream a Lambda response; a Function URL can. It
        // has no CORS block: preflights reach the handler, which answers
        // them for the page's origin (api::cors), as the local cloud does.
        props.insert("FunctionUrlConfig".into(), json!({"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"}));
    }
    json!({
        "Type": "AWS::Serverless::Function",
        "Metadata": {"BuildMethod": "rust-cargolambda", "BuildProperties": {"Binary": def.package}},
        "Properties": props,
    })
}

/// The sweep's schedule, by name (functions turn it on and off by name).
const SWEEP_SCHEDULE_NAME: &str = "${AWS::StackName}-sweep";

fn rate_expression(rate: u32) -> String {
    if rate % 60 == 0 {
        let m = rate / 60;
        format!("rate({m} minute{})", if m == 1 { "" } else { "s" })
    } else {
        format!("rate({rate} seconds)")
    }
}

/// The scheduled functions (the sweep): an EventBridge Scheduler schedule
/// of a known name each, enabled at deploy; the sweep switches it off while
/// there is nothing to sweep (`store::sweep_schedule`).
fn schedules(resources: &mut Map<String, Value>) {
    for (f, rate) in SCHEDULES {
        let def = f.def();
        let name = def.logical_id.trim_end_matches("Function");
        let role = format!("{name}ScheduleRole");
        let policy = format!("{name}SchedulePolicy");
        resources.insert(
            role.clone(),
            json!({"Type": "AWS::IAM::Role", "Properties": {
                "Description": format!("Assumed by EventBridge Scheduler to invoke functions/{}", def.package),
                "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                    "Effect": "Allow",
                    "Principal": {"Service": "scheduler.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                    "Condition": {"StringEquals": {"aws:SourceAccount": r#ref("AWS::AccountId")}},
                }]},
            }}),
        );
        // A policy of its own: the function's role names the role above
        // (PassRole), so the role itself cannot name the function.
        resources.insert(
            policy.clone(),
            json!({"Type": "AWS::IAM::Policy", "Properties": {
                "PolicyName": "InvokeScheduledFunction",
                "Roles": [r#ref(&role)],
                "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
                    "Effect": "Allow",
                    "Action": "lambda:InvokeFunction",
                    "Resource": get_att(def.logical_id, "Arn"),
                }]},
            }}),
        );
        resources.insert(
            format!("{name}Schedule"),
            json!({"Type": "AWS::Scheduler::Schedule", "DependsOn": [policy], "Properties": {
                "Name": sub(&format!("${{AWS::StackName}}-{}", def.package)),
                "Description": format!("Runs functions/{} while it has work (it turns this off when idle)", def.package),
                "ScheduleExpression": rate_expression(*rate),
                "FlexibleTimeWindow": {"Mode": "OFF"},
                "State": "ENABLED",
                "Target": {"Arn": get_att(def.logical_id, "Arn"), "RoleArn": get_att(&role, "Arn"), "Input": "{}"},
            }}),
        );
    }
}

fn ws_route_id(route: &str) -> String {
    let name: String = route.trim_start_matches('$').chars().filter(char::is_ascii_alphanumeric).collect();
    let mut c = name.chars();
    let name = match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    };
    format!("WebSocketRoute{name}")
}

/// The whole SAM template as YAML.
pub fn render() -> String {
    let mut resources = Map::new();
    for t in TABLES {
        resources.insert(t.logical_id.into(), table(t));
    }
    for q in QUEUES {
        resources.insert(
            q.dlq_logical_id.into(),
            json!({"Type": "AWS::SQS::Queue", "Properties": {"MessageRetentionPeriod": 1_209_600, "SqsManagedSseEnabled": true}}),
        );
        resources.insert(
            q.logical_id.into(),
            json!({"Type": "AWS::SQS::Queue", "Properties": {
                "VisibilityTimeout": q.visibility_timeout_secs,
                "SqsManagedSseEnabled": true,
                "RedrivePolicy": {"deadLetterTargetArn": get_att(q.dlq_logical_id, "Arn"), "maxReceiveCount": q.max_receive_count},
            }}),
        );
    }
    resources.insert(
        "CredentialsKey".into(),
        json!({"Type": "AWS::KMS::Key", "Properties": {
            "Description": "Wraps the data keys that encrypt credential secrets",
            "EnableKeyRotation": true,
            "KeyPolicy": {"Version": "2012-10-17", "Statement": [{
                "Sid": "AccountAdministers",
                "Effect": "Allow",
                "Principal": {"AWS": sub("arn:${AWS::Partition}:iam::${AWS::AccountId}:root")},
                "Action": "kms:*",
                "Resource": "*",
            }]},
        }}),
    );
    resources.insert(
        "HttpApi".into(),
        json!({"Type": "AWS::Serverless::HttpApi", "Properties": {"Description": "Instance AI HTTP API (bearer keys are checked by each function)"}}),
    );
    resources.insert(
        "WebSocketApi".into(),
        json!({"Type": "AWS::ApiGatewayV2::Api", "Properties": {
            "Name": sub("${AWS::StackName}-ws"),
            "ProtocolType": "WEBSOCKET",
            "RouteSelectionExpression": "$request.body.action",
        }}),
    );
    let ws_fn = WS_FUNCTION.def().logical_id;
    resources.insert(
        "WebSocketIntegration".into(),
        json!({"Type": "AWS::ApiGatewayV2::Integration", "Properties": {
            "ApiId": r#ref("WebSocketApi"),
            "IntegrationType": "AWS_PROXY",
            "IntegrationUri": sub(&format!("arn:${{AWS::Partition}}:apigateway:${{AWS::Region}}:lambda:path/2015-03-31/functions/${{{ws_fn}.Arn}}/invocations")),
        }}),
    );
    let mut route_ids = Vec::new();
    for route in WS_ROUTES {
        let id = ws_route_id(route);
        resources.insert(
            id.clone(),
            json!({"Type": "AWS::ApiGatewayV2::Route", "Properties": {
                "ApiId": r#ref("WebSocketApi"),
                "RouteKey": route,
                "AuthorizationType": "NONE",
                "Target": sub("integrations/${WebSocketIntegration}"),
            }}),
        );
        route_ids.push(id);
    }
    resources.insert(
        "WebSocketDeployment".into(),
        json!({"Type": "AWS::ApiGatewayV2::Deployment", "DependsOn": route_ids, "Properties": {"ApiId": r#ref("WebSocketApi")}}),
    );
    resources.insert(
        "WebSocketStage".into(),
        json!({"Type": "AWS::ApiGatewayV2::Stage", "Properties": {
            "ApiId": r#ref("WebSocketApi"),
            "StageName": r#ref("Stage"),
            "DeploymentId": r#ref("WebSocketDeployment"),
            "DefaultRouteSettings": {"ThrottlingBurstLimit": 500, "ThrottlingRateLimit": 1000},
        }}),
    );
    resources.insert(
        "WebSocketInvokePermission".into(),
        json!({"Type": "AWS::Lambda::Permission", "Properties": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": r#ref(ws_fn),
            "Principal": "apigateway.amazonaws.com",
            "SourceArn": sub("arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/*"),
        }}),
    );
    // Published Schedule Triggers: one schedule per rule in this group,
    // each sending its tick to the Runs queue through this role.
    resources.insert(
        "ScheduleGroup".into(),
        json!({"Type": "AWS::Scheduler::ScheduleGroup", "Properties": {"Name": sub("${AWS::StackName}-workflows")}}),
    );
    let runs = QueueId::Runs.def().logical_id;
    resources.insert(
        "SchedulerRole".into(),
        json!({"Type": "AWS::IAM::Role", "Properties": {
            "Description": "Assumed by EventBridge Scheduler to send schedule ticks to the Runs queue",
            "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow",
                "Principal": {"Service": "scheduler.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": r#ref("AWS::AccountId")}},
            }]},
            "Policies": [{
                "PolicyName": "SendScheduleTicks",
                "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
                    "Effect": "Allow",
                    "Action": "sqs:SendMessage",
                    "Resource": get_att(runs, "Arn"),
                }]},
            }],
        }}),
    );
    schedules(&mut resources);
    for f in FUNCTIONS {
        resources.insert(f.logical_id.into(), function(f));
    }

    let template = json!({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Description": "Instance AI: a serverless AI assistant for workflow automation (generated from store::deployment by `cargo run -p local-cloud -- template`; do not edit by hand)",
        "Parameters": {
            "Stage": {"Type": "String", "Default": "prod", "Description": "WebSocket API stage name"},
            "ModelProvider": {"Type": "String", "Default": "", "Description": "INSTANCE_AI_MODEL, e.g. bedrock:anthropic.claude-sonnet-4 or anthropic:claude-sonnet-4-5"},
            "MaxStepsPerRun": {"Type": "Number", "Default": 50, "MinValue": 1, "Description": "INSTANCE_AI_MAX_STEPS"},
            "LogLevel": {"Type": "String", "Default": "info", "Description": "RUST_LOG filter"},
            "PublicUrl": {"Type": "String", "Default": "", "Description": "INSTANCE_AI_PUBLIC_URL: base URL of webhooks, forms and resume URLs (a custom domain); empty: the HTTP API's URL"},
            "ModelApiKeySecret": {"Type": "String", "Default": "", "Description": "Secrets Manager secret (name or ARN) whose SecretString is the model provider's API key (ANTHROPIC_API_KEY / OPENAI_API_KEY of the step function); empty for bedrock:, which uses the function's IAM role"},
            "AllowedOrigins": {"Type": "String", "Default": "", "Description": "INSTANCE_AI_ALLOWED_ORIGINS: comma-separated browser origins allowed to call /mcp; empty: none (clients without Origin are always allowed)"},
            "WebOrigin": {"Type": "String", "Default": "*", "Description": "INSTANCE_AI_WEB_ORIGIN: the web page's origin allowed to read the SSE Function URL (the WebUrl output without its path, or your domain); * allows any (keys travel in a header, never in cookies)"},
        },
        "Conditions": {
            "HasPublicUrl": {"Fn::Not": [{"Fn::Equals": [r#ref("PublicUrl"), ""]}]},
            "HasModelApiKeySecret": {"Fn::Not": [{"Fn::Equals": [r#ref("ModelApiKeySecret"), ""]}]},
        },
        "Globals": {"Function": {
            "Runtime": "provided.al2023",
            "Architectures": ["arm64"],
            "Handler": "bootstrap",
            "Environment": {"Variables": {"RUST_LOG": r#ref("LogLevel"), "INSTANCE_AI_LOG_FORMAT": "json"}},
        }},
        "Resources": resources,
        "Outputs": {
            "HttpApiUrl": {"Description": "HTTP API (chat, confirm, cancel, threads, mcp, healthz; webhook/, webhook-test/, webhook-waiting/, form/, form-test/, form-waiting/)", "Value": sub("https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/")},
            "WebUrl": {"Description": "The web page (sign in with an API key)", "Value": sub("https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/")},
            "EventsUrl": {"Description": "SSE stream: GET <url>instance-ai/events/{threadId}", "Value": get_att("EventsFunctionUrl", "FunctionUrl")},
            "WebSocketUrl": {"Description": "WebSocket API (connect with ?token=<api key>)", "Value": sub("wss://${WebSocketApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${Stage}")},
        },
    });
    let yaml = quote_yaml11_booleans(&serde_yaml::to_string(&template).unwrap_or_default());
    format!("# Generated from shared/store/src/deployment.rs: `cargo run -p local-cloud -- template > infra/template.yaml`.\n{yaml}")
}

/// Quotes plain scalars YAML 1.1 reads as booleans (`Mode: OFF` is `false`
/// to cfn-lint and CloudFormation's YAML parser; serde_yaml writes YAML 1.2).
fn quote_yaml11_booleans(yaml: &str) -> String {
    const WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off"];
    let mut out = String::with_capacity(yaml.len());
    for line in yaml.lines() {
        let value = line.rsplit_once(": ").map(|(_, v)| v).or_else(|| line.trim_start().strip_prefix("- "));
        match value {
            Some(v) if WORDS.contains(&v.to_ascii_lowercase().as_str()) => {
                out.push_str(&line[..line.len() - v.len()]);
                out.push_str(&format!("'{v}'"));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Table ids referenced by the template (for tests).
pub fn table_ids() -> Vec<TableId> {
    TABLES.iter().map(|t| t.id).collect()
}
