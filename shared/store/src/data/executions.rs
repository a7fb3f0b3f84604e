//! Workflow executions and their run data.
//!
//! Run data (n8n's `IRunExecutionData`: `resultData.runData[node][run]…`)
//! can be far larger than one DynamoDB item (400 KB). It is split by node:
//! each node's runs, and the rest of the document, are DEFLATE-compressed
//! and cut into parts of at most ~350 KB, one item each. Nothing is ever
//! truncated on write. A reader can ask for some nodes only (one Query per
//! node) and cap items per output, which is applied after decompression.
//! The JSON text is [`stored_json`]'s: data of any depth it accepts (up to
//! [`stored_json::MAX_DEPTH`] levels) reads back; deeper fails the save.
//!
//! Writes never expose a half-written document: parts go under a fresh
//! generation (`data#<gen>#…`); only when all are written does the meta
//! item switch to that generation, and the old generation is deleted after.
//!
//! Items (Executions table, partition `exec#<id>`):
//! - meta `sk=meta`, `gsi1pk=wfexec#<workflowId>`, `gsi1sk=<id>` (ids are
//!   time-ordered uuid v7, so the index lists newest first and `lastId` is
//!   a key condition, not a scan)
//! - parts `sk=data#<gen>#<slot>#<part>` with `slot` = `base` or `n<index>`
//!
//! A waiter (an agent's tool call parked on the execution) is a `waiter`
//! attribute on the meta item: the message to send when the execution
//! settles. It is written only while the execution is `new` or `running`
//! ([`Executions::watch`], part of the agent's park transaction) and taken
//! exactly once by whoever settles it ([`Executions::take_waiter`]).
//! - response `sk=response`: the HTTP answer a webhook caller waits for
//!   (written by the executor, read by the webhook function)
//! - stream batches `sk=stream#<seq, 10 digits>`: lines of a streamed answer
//!   (the Chat Trigger's `streaming` mode), in order; all are written before
//!   the meta item's final status, so a reader that sees that status in the
//!   same Query (meta sorts first) has every line
//!
//! Retention: `expiresAt` (DynamoDB TTL) on the meta item and every part,
//! set from the meta item's at each save, so an execution expires whole.

use super::db::{self, b, get_b, get_s, key, s, to_item, Item, Table, MAX_ITEM_PAYLOAD};
use super::stored_json;
use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    Cli,
    Error,
    Integrated,
    Internal,
    Manual,
    Retry,
    Trigger,
    Webhook,
    Evaluation,
    Chat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionStatus {
    New,
    Running,
    Success,
    Error,
    Waiting,
    Canceled,
    Crashed,
    Unknown,
}

impl ExecutionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::New => "new",
            ExecutionStatus::Running => "running",
            ExecutionStatus::Success => "success",
            ExecutionStatus::Error => "error",
            ExecutionStatus::Waiting => "waiting",
            ExecutionStatus::Canceled => "canceled",
            ExecutionStatus::Crashed => "crashed",
            ExecutionStatus::Unknown => "unknown",
        }
    }

    pub fn is_finished(self) -> bool {
        matches!(
            self,
            ExecutionStatus::Success | ExecutionStatus::Error | ExecutionStatus::Canceled | ExecutionStatus::Crashed
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    pub id: String,
    pub workflow_id: String,
    pub mode: ExecutionMode,
    pub status: ExecutionStatus,
    pub created_at: String,
    pub started_at: Option<String>,
    pub stopped_at: Option<String>,
    pub wait_till: Option<String>,
    pub retry_of: Option<String>,
    pub retry_success_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewExecution {
    pub workflow_id: String,
    pub mode: ExecutionMode,
    pub status: ExecutionStatus,
    pub started_at: Option<String>,
    pub retry_of: Option<String>,
    /// Seconds to keep the record (TTL); `None` keeps it.
    pub retention_secs: Option<u64>,
}

/// What a caller waiting on an execution sees.
#[derive(Debug, Clone, PartialEq)]
pub struct Polled {
    pub status: ExecutionStatus,
    pub error: Option<String>,
    pub response: Option<Value>,
}

/// What a streaming reader sees in one poll.
#[derive(Debug, Clone)]
pub struct StreamPoll {
    pub status: ExecutionStatus,
    /// Batches after the cursor: (sequence number, lines).
    pub batches: Vec<(u64, String)>,
}

/// How much run data to read.
#[derive(Debug, Clone, Default)]
pub struct DataSelection {
    /// Only these nodes' runs (others are not read at all).
    pub node_names: Option<Vec<String>>,
    /// At most this many items per node output, per run.
    pub max_items: Option<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct ExecutionSearch {
    /// The workflows to search (the caller passes the ones the user can
    /// read); each is one index partition.
    pub workflow_ids: Vec<String>,
    pub statuses: Vec<ExecutionStatus>,
    /// ISO 8601.
    pub started_after: Option<String>,
    pub started_before: Option<String>,
    /// 1–200, default 20.
    pub limit: Option<usize>,
    /// Cursor: the last id of the previous page.
    pub last_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExecutionPage {
    pub data: Vec<Execution>,
    /// Every match of the filters, ignoring the cursor.
    pub count: usize,
    pub estimated: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaItem {
    pk: String,
    sk: String,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    execution: Execution,
    #[serde(default)]
    data_gen: Option<String>,
    /// Node names in slot order (`n0`, `n1`, ...).
    #[serde(default)]
    data_nodes: Vec<String>,
    /// Uncompressed size of the last saved run data.
    #[serde(default)]
    data_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
}

fn pk(id: &str) -> String {
    format!("exec#{id}")
}

fn parts(id: &str, gen: &str, slot: &str, json: &[u8], expires_at: Option<u64>) -> Result<Vec<Item>, StoreError> {
    let packed = db::compress(json)?;
    // An empty slot still gets one (empty) part, so every slot exists.
    let chunks: Vec<&[u8]> = if packed.is_empty() { vec![&[][..]] } else { packed.chunks(MAX_ITEM_PAYLOAD).collect() };
    Ok(chunks
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let mut item = key(pk(id), format!("data#{gen}#{slot}#{i:05}"));
            item.insert("part".into(), b(c.to_vec()));
            if let Some(t) = expires_at {
                item.insert("expiresAt".into(), db::n(t));
            }
            item
        })
        .collect())
}

fn join_parts(items: &[Item]) -> Result<Value, StoreError> {
    let mut packed = Vec::new();
    for item in items {
        packed.extend(get_b(item, "part").ok_or_else(|| StoreError::Corrupt("run data part without bytes".into()))?);
    }
    stored_json::parse(&db::decompress(&packed)?).map_err(|e| StoreError::Corrupt(format!("run data: {e}")))
}

/// The document without `resultData.runData`, which is stored apart (copied
/// key by key: the run data is the bulk and is not copied).
fn without_run_data(data: &Value) -> Value {
    let Value::Object(top) = data else { return data.clone() };
    let copy = |(k, v): (&String, &Value)| (k.clone(), v.clone());
    Value::Object(
        top.iter()
            .map(|(k, v)| match v {
                Value::Object(r) if k == "resultData" => {
                    (k.clone(), Value::Object(r.iter().filter(|(k, _)| *k != "runData").map(copy).collect()))
                }
                _ => copy((k, v)),
            })
            .collect(),
    )
}

/// Caps every output of every run of a node at `max` items.
fn truncate_runs(runs: &mut Value, max: usize) {
    let Some(runs) = runs.as_array_mut() else { return };
    for run in runs {
        let Some(data) = run.get_mut("data").and_then(Value::as_object_mut) else { continue };
        for outputs in data.values_mut() {
            for output in outputs.as_array_mut().into_iter().flatten() {
                if let Some(items) = output.as_array_mut() {
                    items.truncate(max);
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Executions {
    table: Table,
}

impl Executions {
    pub fn new(table: Table) -> Self {
        Executions { table }
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    pub async fn create(&self, new: NewExecution) -> Result<Execution, StoreError> {
        let started_at = match new.started_at {
            Some(t) => {
                Some(db::parse_iso(&t).ok_or_else(|| StoreError::Invalid(format!("startedAt {t:?} is not ISO 8601")))?)
            }
            None => None,
        };
        let execution = Execution {
            id: db::new_ordered_id(),
            workflow_id: new.workflow_id.clone(),
            mode: new.mode,
            status: new.status,
            created_at: db::now_iso(),
            started_at,
            stopped_at: None,
            wait_till: None,
            retry_of: new.retry_of,
            retry_success_id: None,
        };
        let item = MetaItem {
            pk: pk(&execution.id),
            sk: "meta".into(),
            gsi1pk: format!("wfexec#{}", new.workflow_id),
            gsi1sk: execution.id.clone(),
            execution: execution.clone(),
            data_gen: None,
            data_nodes: Vec::new(),
            data_bytes: None,
            expires_at: new.retention_secs.map(|r| db::now_secs() + r),
        };
        self.table.count();
        self.table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(to_item(&item)?))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(execution)
    }

    async fn meta(&self, id: &str) -> Result<Option<MetaItem>, StoreError> {
        self.table.get::<MetaItem>(&pk(id), "meta").await
    }

    pub async fn get(&self, id: &str) -> Result<Option<Execution>, StoreError> {
        Ok(self.meta(id).await?.map(|m| m.execution))
    }

    /// Sets the status; finished statuses stamp `stoppedAt`. `wait_till`
    /// `Some(None)` clears it.
    pub async fn set_status(
        &self,
        id: &str,
        status: ExecutionStatus,
        wait_till: Option<Option<String>>,
    ) -> Result<Execution, StoreError> {
        let mut sets = vec!["#st = :st"];
        let mut values = vec![(":st", s(status.as_str()))];
        if status.is_finished() {
            sets.push("stoppedAt = :now");
            values.push((":now", s(db::now_iso())));
        }
        if status == ExecutionStatus::Running {
            sets.push("startedAt = if_not_exists(startedAt, :started)");
            values.push((":started", s(db::now_iso())));
        }
        if let Some(w) = wait_till {
            let v =
                match w {
                    Some(t) => s(db::parse_iso(&t)
                        .ok_or_else(|| StoreError::Invalid(format!("waitTill {t:?} is not ISO 8601")))?),
                    None => AttributeValue::Null(true),
                };
            sets.push("waitTill = :wt");
            values.push((":wt", v));
        }
        self.update_meta(id, &format!("SET {}", sets.join(", ")), values).await
    }

    pub async fn set_retry_success(&self, id: &str, retry_id: &str) -> Result<Execution, StoreError> {
        self.update_meta(id, "SET retrySuccessId = :r", vec![(":r", s(retry_id))]).await
    }

    async fn update_meta(
        &self,
        id: &str,
        update: &str,
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<Execution, StoreError> {
        let mut req = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), "meta")))
            .update_expression(update)
            .condition_expression("attribute_exists(pk)")
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew);
        if update.contains("#st") {
            req = req.expression_attribute_names("#st", "status");
        }
        for (k, v) in values {
            req = req.expression_attribute_values(k, v);
        }
        self.table.count();
        match req.send().await {
            Ok(out) => Ok(db::from_item::<MetaItem>(out.attributes.unwrap_or_default())?.execution),
            Err(e) if db::is_condition_failed(&e) => Err(StoreError::NotFound(format!("execution {id}"))),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// The transaction action that registers `message` (a Steps queue body)
    /// to be sent when the execution settles; it fails the transaction when
    /// the execution is already finished or `waiting`.
    pub fn watch(&self, id: &str, message: &str) -> Result<aws_sdk_dynamodb::types::TransactWriteItem, StoreError> {
        db::tx_update(
            &self.table.name,
            key(pk(id), "meta"),
            "SET waiter = :w",
            Some("attribute_exists(pk) AND (#st = :new OR #st = :running)"),
            &[("#st", "status")],
            vec![(":w", s(message)), (":new", s("new")), (":running", s("running"))],
        )
    }

    /// Takes the waiter's message, if any (one conditional REMOVE: of
    /// concurrent takers exactly one gets it).
    pub async fn take_waiter(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.table.count();
        let res = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), "meta")))
            .update_expression("REMOVE waiter")
            .condition_expression("attribute_exists(waiter)")
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedOld)
            .send()
            .await;
        match res {
            Ok(out) => Ok(out.attributes.as_ref().and_then(|a| get_s(a, "waiter")).map(str::to_owned)),
            Err(e) if db::is_condition_failed(&e) => Ok(None),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Stores the full run data (any size), replacing what was there.
    pub async fn save_data(&self, id: &str, data: &Value) -> Result<(), StoreError> {
        let old = self.meta(id).await?.ok_or_else(|| StoreError::NotFound(format!("execution {id}")))?;
        let gen = db::new_ordered_id();
        let base = without_run_data(data);
        let empty = Map::new();
        let run_data = data.pointer("/resultData/runData").and_then(Value::as_object).unwrap_or(&empty);
        let had_run_data = data.get("resultData").and_then(|r| r.get("runData")).is_some();
        let mut items = Vec::new();
        let mut total = 0u64;
        // Too deep a document fails here, before anything is written.
        let base_json = stored_json::to_vec(&base, 0).map_err(|e| StoreError::Invalid(format!("run data: {e}")))?;
        total += base_json.len() as u64;
        items.extend(parts(id, &gen, "base", &base_json, old.expires_at)?);
        let mut nodes = Vec::with_capacity(run_data.len());
        for (i, (name, runs)) in run_data.iter().enumerate() {
            let json =
                // Read back inside the document's resultData.runData: 3 levels.
                stored_json::to_vec(runs, 3).map_err(|e| StoreError::Invalid(format!("run data of {name:?}: {e}")))?;
            total += json.len() as u64;
            items.extend(parts(id, &gen, &format!("n{i:05}"), &json, old.expires_at)?);
            nodes.push(name.clone());
        }
        if !had_run_data {
            // Marks "no runData key" apart from an empty one, so the
            // document reads back exactly as written.
            nodes.clear();
        }
        let reqs = items.into_iter().map(db::put_req).collect::<Result<Vec<_>, _>>()?;
        if let Err(e) = self.table.batch_write(reqs).await {
            // Readers still see the previous generation; drop our partial one.
            self.delete_generation(id, &gen).await.ok();
            return Err(e);
        }
        let nodes_av = AttributeValue::L(nodes.iter().map(s).collect());
        self.table.count();
        let res = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), "meta")))
            .update_expression("SET dataGen = :g, dataNodes = :n, dataBytes = :b, hasRunData = :h")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":g", s(&gen))
            .expression_attribute_values(":n", nodes_av)
            .expression_attribute_values(":b", db::n(total))
            .expression_attribute_values(":h", AttributeValue::Bool(had_run_data))
            .send()
            .await;
        if let Err(e) = res {
            self.delete_generation(id, &gen).await.ok();
            return Err(StoreError::dynamo(e));
        }
        if let Some(old_gen) = old.data_gen {
            self.delete_generation(id, &old_gen).await?;
        }
        Ok(())
    }

    async fn delete_generation(&self, id: &str, gen: &str) -> Result<(), StoreError> {
        let items = self.table.query_prefix(&pk(id), &format!("data#{gen}#"), false).await?;
        self.delete_items(items).await
    }

    async fn delete_items(&self, items: Vec<Item>) -> Result<(), StoreError> {
        let reqs = items
            .iter()
            .filter_map(|i| Some(key(get_s(i, "pk")?, get_s(i, "sk")?)))
            .map(db::delete_req)
            .collect::<Result<Vec<_>, _>>()?;
        self.table.batch_write(reqs).await
    }

    /// Sets the status to a finished one and stores the run data.
    pub async fn finish(
        &self,
        id: &str,
        status: ExecutionStatus,
        data: Option<&Value>,
    ) -> Result<Execution, StoreError> {
        if let Some(d) = data {
            self.save_data(id, d).await?;
        }
        self.set_status(id, status, Some(None)).await
    }

    /// The run data, whole or limited; `None` when none was saved.
    pub async fn get_data(&self, id: &str, sel: &DataSelection) -> Result<Option<Value>, StoreError> {
        // A save switches to a new generation, then deletes the old one: a
        // read that straddles the switch finds parts gone (frequent for a
        // running execution, whose progress is saved as it goes). Read again
        // from the generation that replaced it.
        let mut retries = 0;
        loop {
            let Some(raw) = self.table.get_raw(&pk(id), "meta").await? else {
                return Err(StoreError::NotFound(format!("execution {id}")));
            };
            let read_gen = get_s(&raw, "dataGen").map(str::to_owned);
            match self.read_generation(id, sel, raw).await {
                Err(StoreError::Corrupt(reason)) if retries < 5 => {
                    let now = self.table.get_raw(&pk(id), "meta").await?;
                    if now.as_ref().and_then(|m| get_s(m, "dataGen")) == read_gen.as_deref() {
                        return Err(StoreError::Corrupt(reason));
                    }
                    retries += 1;
                }
                other => return other,
            }
        }
    }

    async fn read_generation(&self, id: &str, sel: &DataSelection, raw: Item) -> Result<Option<Value>, StoreError> {
        let has_run_data = matches!(raw.get("hasRunData"), Some(AttributeValue::Bool(true)));
        let meta: MetaItem = db::from_item(raw)?;
        let Some(gen) = meta.data_gen else { return Ok(None) };
        let prefix = format!("data#{gen}#");
        let wanted: Vec<(usize, &String)> = match &sel.node_names {
            None => meta.data_nodes.iter().enumerate().collect(),
            Some(names) => meta.data_nodes.iter().enumerate().filter(|(_, n)| names.contains(n)).collect(),
        };
        let mut base = join_parts(&self.table.query_prefix(&pk(id), &format!("{prefix}base#"), false).await?)?;
        let mut run_data = Map::new();
        if sel.node_names.is_none() && !wanted.is_empty() {
            // Everything: one paged Query, then split by slot.
            let all = self.table.query_prefix(&pk(id), &format!("{prefix}n"), false).await?;
            for (i, name) in &wanted {
                let slot = format!("{prefix}n{i:05}#");
                let mine: Vec<Item> =
                    all.iter().filter(|it| get_s(it, "sk").is_some_and(|sk| sk.starts_with(&slot))).cloned().collect();
                run_data.insert((*name).clone(), join_parts(&mine)?);
            }
        } else {
            for (i, name) in &wanted {
                let items = self.table.query_prefix(&pk(id), &format!("{prefix}n{i:05}#"), false).await?;
                run_data.insert((*name).clone(), join_parts(&items)?);
            }
        }
        if let Some(max) = sel.max_items {
            for runs in run_data.values_mut() {
                truncate_runs(runs, max);
            }
        }
        if has_run_data {
            match base.get_mut("resultData").and_then(Value::as_object_mut) {
                Some(r) => {
                    r.insert("runData".into(), Value::Object(run_data));
                }
                None => return Err(StoreError::Corrupt(format!("execution {id}: run data without resultData"))),
            }
        }
        Ok(Some(base))
    }

    /// `search_executions`: newest first, filtered, paged by `last_id`.
    pub async fn search(&self, q: &ExecutionSearch) -> Result<ExecutionPage, StoreError> {
        let limit = q.limit.unwrap_or(20).clamp(1, 200);
        let after = q
            .started_after
            .as_deref()
            .map(|t| db::parse_iso(t).ok_or_else(|| StoreError::Invalid(format!("startedAfter {t:?} is not ISO 8601"))))
            .transpose()?;
        let before = q
            .started_before
            .as_deref()
            .map(|t| {
                db::parse_iso(t).ok_or_else(|| StoreError::Invalid(format!("startedBefore {t:?} is not ISO 8601")))
            })
            .transpose()?;
        let mut conds = Vec::new();
        let mut values: Vec<(String, AttributeValue)> = Vec::new();
        if !q.statuses.is_empty() {
            let names: Vec<String> = (0..q.statuses.len()).map(|i| format!(":s{i}")).collect();
            conds.push(format!("#st IN ({})", names.join(", ")));
            for (n, st) in names.into_iter().zip(&q.statuses) {
                values.push((n, s(st.as_str())));
            }
        }
        if let Some(a) = &after {
            conds.push("startedAt > :after".into());
            values.push((":after".into(), s(a)));
        }
        if let Some(b) = &before {
            conds.push("startedAt < :before".into());
            values.push((":before".into(), s(b)));
        }
        let filter = (!conds.is_empty()).then(|| conds.join(" AND "));

        let mut data = Vec::new();
        let mut count = 0usize;
        for wf in &q.workflow_ids {
            data.extend(self.query_index(wf, filter.as_deref(), &values, q.last_id.as_deref(), Some(limit)).await?);
            count += self.count_index(wf, filter.as_deref(), &values).await?;
        }
        data.sort_by(|a: &Execution, b| b.id.cmp(&a.id));
        data.truncate(limit);
        Ok(ExecutionPage { data, count, estimated: false })
    }

    async fn query_index(
        &self,
        workflow_id: &str,
        filter: Option<&str>,
        values: &[(String, AttributeValue)],
        last_id: Option<&str>,
        want: Option<usize>,
    ) -> Result<Vec<Execution>, StoreError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut req = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .index_name("gsi1")
                .scan_index_forward(false)
                .expression_attribute_values(":pk", s(format!("wfexec#{workflow_id}")))
                .set_exclusive_start_key(start.take())
                .set_filter_expression(filter.map(str::to_owned));
            req = match last_id {
                Some(l) => req
                    .key_condition_expression("gsi1pk = :pk AND gsi1sk < :last")
                    .expression_attribute_values(":last", s(l)),
                None => req.key_condition_expression("gsi1pk = :pk"),
            };
            if filter.is_some_and(|f| f.contains("#st")) {
                req = req.expression_attribute_names("#st", "status");
            }
            for (k, v) in values {
                req = req.expression_attribute_values(k, v.clone());
            }
            self.table.count();
            let page = req.send().await.map_err(StoreError::dynamo)?;
            for item in page.items.unwrap_or_default() {
                out.push(db::from_item::<MetaItem>(item)?.execution);
            }
            if want.is_some_and(|w| out.len() >= w) {
                return Ok(out);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    async fn count_index(
        &self,
        workflow_id: &str,
        filter: Option<&str>,
        values: &[(String, AttributeValue)],
    ) -> Result<usize, StoreError> {
        let mut total = 0usize;
        let mut start: Option<Item> = None;
        loop {
            let mut req = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .index_name("gsi1")
                .select(aws_sdk_dynamodb::types::Select::Count)
                .key_condition_expression("gsi1pk = :pk")
                .expression_attribute_values(":pk", s(format!("wfexec#{workflow_id}")))
                .set_exclusive_start_key(start.take())
                .set_filter_expression(filter.map(str::to_owned));
            if filter.is_some_and(|f| f.contains("#st")) {
                req = req.expression_attribute_names("#st", "status");
            }
            for (k, v) in values {
                req = req.expression_attribute_values(k, v.clone());
            }
            self.table.count();
            let page = req.send().await.map_err(StoreError::dynamo)?;
            total += page.count.max(0) as usize;
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(total),
            }
        }
    }

    /// Sets when the execution expires (`None`: never, e.g. while it waits
    /// for a resume). Parts written from now on carry the same time.
    pub async fn set_expiry(&self, id: &str, expires_at: Option<u64>) -> Result<(), StoreError> {
        match expires_at {
            Some(t) => self.update_meta(id, "SET expiresAt = :t", vec![(":t", db::n(t))]).await?,
            None => self.update_meta(id, "REMOVE expiresAt", vec![]).await?,
        };
        Ok(())
    }

    /// Stores the answer for the HTTP caller waiting on this execution;
    /// `token` names that caller (a later resume waits for its own).
    pub async fn put_response(&self, id: &str, token: &str, response: &Value) -> Result<(), StoreError> {
        let json = stored_json::to_vec(response, 0).map_err(|e| StoreError::Invalid(format!("response: {e}")))?;
        let packed = db::compress(&json)?;
        if packed.len() > MAX_ITEM_PAYLOAD {
            return Err(StoreError::Invalid(format!(
                "the webhook response is too large to deliver ({} bytes compressed, at most {MAX_ITEM_PAYLOAD})",
                packed.len()
            )));
        }
        let mut item = key(pk(id), "response");
        item.insert("token".into(), s(token));
        item.insert("body".into(), b(packed));
        // Only its caller reads it, within seconds.
        item.insert("expiresAt".into(), db::n(db::now_secs() + 86_400));
        self.table.put(item).await
    }

    /// The status and, when written for `token`, the response: one
    /// consistent Query over the meta and response items.
    pub async fn poll_response(&self, id: &str, token: &str) -> Result<Option<Polled>, StoreError> {
        self.table.count();
        let out = self
            .table
            .client
            .query()
            .table_name(&self.table.name)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND sk BETWEEN :a AND :b")
            .expression_attribute_values(":pk", s(pk(id)))
            .expression_attribute_values(":a", s("meta"))
            .expression_attribute_values(":b", s("response"))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        let items = out.items.unwrap_or_default();
        let Some(meta) = items.iter().find(|i| get_s(i, "sk") == Some("meta")) else { return Ok(None) };
        let status = get_s(meta, "status")
            .and_then(|v| serde_json::from_value(Value::String(v.to_owned())).ok())
            .unwrap_or(ExecutionStatus::Unknown);
        let response = match items.iter().find(|i| get_s(i, "sk") == Some("response")) {
            Some(r) if get_s(r, "token") == Some(token) => {
                let packed = get_b(r, "body").ok_or_else(|| StoreError::Corrupt("response without body".into()))?;
                Some(
                    stored_json::parse(&db::decompress(&packed)?)
                        .map_err(|e| StoreError::Corrupt(format!("response: {e}")))?,
                )
            }
            _ => None,
        };
        Ok(Some(Polled { status, error: get_s(meta, "errorMessage").map(str::to_owned), response }))
    }

    /// Appends batch `seq` (1, 2, …) of a streamed answer's lines.
    pub async fn put_stream_batch(&self, id: &str, seq: u64, lines: &str) -> Result<(), StoreError> {
        let mut item = key(pk(id), format!("stream#{seq:010}"));
        item.insert("lines".into(), s(lines));
        // read by the caller while the run goes on
        item.insert("expiresAt".into(), db::n(db::now_secs() + 86_400));
        self.table.put(item).await
    }

    /// The status and the stream batches after `after`, in one consistent
    /// Query (meta sorts before the batches, see the module docs).
    pub async fn poll_stream(&self, id: &str, after: u64) -> Result<Option<StreamPoll>, StoreError> {
        let mut status = None;
        let mut batches = vec![];
        let mut start = None;
        loop {
            self.table.count();
            let out = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND sk BETWEEN :a AND :b")
                .filter_expression("sk = :a OR sk > :after")
                .expression_attribute_values(":pk", s(pk(id)))
                .expression_attribute_values(":a", s("meta"))
                .expression_attribute_values(":b", s("stream#~"))
                .expression_attribute_values(":after", s(format!("stream#{after:010}")))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            for item in out.items.unwrap_or_default() {
                let sk = get_s(&item, "sk").unwrap_or_default();
                if sk == "meta" {
                    status = Some(
                        get_s(&item, "status")
                            .and_then(|v| serde_json::from_value(Value::String(v.to_owned())).ok())
                            .unwrap_or(ExecutionStatus::Unknown),
                    );
                } else if let Some(seq) = sk.strip_prefix("stream#").and_then(|n| n.parse::<u64>().ok()) {
                    batches.push((seq, get_s(&item, "lines").unwrap_or_default().to_owned()));
                }
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        Ok(status.map(|status| StreamPoll { status, batches }))
    }

    /// Deletes an execution and its run data.
    pub async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let items = self.table.query_prefix(&pk(id), "", false).await?;
        self.delete_items(items).await
    }

    /// Deletes a workflow's finished executions of the given modes (e.g.
    /// `manual` test runs: `cleanup-test-executions`), optionally only those
    /// that started (or, never started, were created) before
    /// `started_before` (ISO 8601); returns how many. Running and waiting
    /// executions are never touched.
    pub async fn delete_for_workflow(
        &self,
        workflow_id: &str,
        modes: &[ExecutionMode],
        started_before: Option<&str>,
    ) -> Result<usize, StoreError> {
        let before = started_before
            .map(|t| db::parse_iso(t).ok_or_else(|| StoreError::Invalid(format!("{t:?} is not ISO 8601"))))
            .transpose()?;
        let all = self.query_index(workflow_id, None, &[], None, None).await?;
        let doomed: Vec<&Execution> = all
            .iter()
            .filter(|e| modes.contains(&e.mode) && e.status.is_finished())
            .filter(|e| {
                // Stored timestamps share one fixed-width UTC form, so they compare as strings.
                let at = e.started_at.as_deref().unwrap_or(&e.created_at);
                before.as_deref().is_none_or(|b| at < b)
            })
            .collect();
        for e in &doomed {
            self.delete(&e.id).await?;
        }
        Ok(doomed.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truncation_caps_each_output() {
        let mut runs = json!([{"data": {"main": [[{"json": {"a": 1}}, {"json": {"a": 2}}, {"json": {"a": 3}}], null, [{"json": {}}]]}}]);
        truncate_runs(&mut runs, 2);
        assert_eq!(runs[0]["data"]["main"][0].as_array().map(Vec::len), Some(2));
        assert_eq!(runs[0]["data"]["main"][2].as_array().map(Vec::len), Some(1));
    }
}
