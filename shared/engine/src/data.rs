//! Items, run data and execution state in n8n's serialized shape.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub use expression::{Item, Json, PairedItem};

/// Items shared between run data and the nodes that read them: a node that
/// passes items through reuses the vector instead of copying it, and items
/// share their `json` (copy-on-write), so re-pairing or re-ordering copies no data.
pub type Items = Arc<Vec<Item>>;

/// Builds an item from JSON with a `pairedItem` to input item `i`.
pub fn item_from(json: Value, paired: usize) -> Item {
    Item { json: Json::new(json), binary: None, paired_item: Some(PairedItem::Index(paired)) }
}

/// `pairedItem` value; a bare number for input 0 (a valid n8n shape that
/// costs no allocation per item).
pub fn paired_ref(item: usize, input: usize) -> PairedItem {
    PairedItem::new(item, input)
}

/// `item` (sharing its data) with `pairedItem` pointing at input item `i`.
pub fn with_pair(item: &Item, i: usize) -> Item {
    item.paired(i, 0)
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
}

/// Where a node run's input came from (`taskData.source[input]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSource {
    pub previous_node: String,
    #[serde(default)]
    pub previous_node_output: usize,
    #[serde(default)]
    pub previous_node_run: usize,
}

/// A node error as n8n serializes it in run data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeError {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default = "node_operation_error")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_code: Option<String>,
    #[serde(default)]
    pub timestamp: i64,
}

fn node_operation_error() -> String {
    "NodeOperationError".into()
}

/// `taskData.data`: connection type → output index → items. Main nodes
/// fill `main`; a sub-node's call is recorded under its own connection type
/// (`ai_languageModel`, `ai_tool`, …) in `other`, as n8n's runData does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskOutputs {
    #[serde(default)]
    pub main: Vec<Option<OutputItems>>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Vec<Option<OutputItems>>>,
}

impl TaskOutputs {
    pub fn new(main: impl IntoIterator<Item = Items>) -> Self {
        TaskOutputs { main: main.into_iter().map(|i| Some(OutputItems::new(i))).collect(), other: BTreeMap::new() }
    }

    /// One output of one connection type (a sub-node call's input or output).
    pub fn of_type(conn_type: &str, items: Vec<Item>) -> Self {
        let outs = vec![Some(OutputItems::new(Arc::new(items)))];
        if conn_type == "main" {
            return TaskOutputs { main: outs, other: BTreeMap::new() };
        }
        TaskOutputs { main: vec![], other: BTreeMap::from([(conn_type.to_owned(), outs)]) }
    }

    /// Every output of every connection type, `main` first.
    pub fn all(&self) -> impl Iterator<Item = &Option<OutputItems>> {
        self.main.iter().chain(self.other.values().flatten())
    }
}

/// One output of a node run. Once nothing in the run still reads it, the
/// engine may pack it into its serialized JSON (a tenth of the memory of
/// `serde_json` values); the first read decodes it again. Readers, equality
/// and the serialized shape never see the difference.
#[derive(Debug, Clone, Default)]
pub struct OutputItems {
    items: OnceLock<Items>,
    packed: Option<Box<RawValue>>,
    len: usize,
}

impl OutputItems {
    pub fn new(items: Items) -> Self {
        let len = items.len();
        OutputItems { items: OnceLock::from(items), packed: None, len }
    }

    pub fn items(&self) -> &Items {
        self.items.get_or_init(|| {
            let packed = self.packed.as_deref().map(RawValue::get).unwrap_or("[]");
            // Written by `pack` from the same type: decoding cannot fail
            // short of memory corruption; an empty list beats a panic.
            Arc::new(unpack(packed).unwrap_or_default())
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Held as serialized JSON (until the next read).
    pub fn is_packed(&self) -> bool {
        self.items.get().is_none()
    }

    /// The shared item vector, while unpacked (for "is anyone else holding it").
    pub(crate) fn unpacked(&self) -> Option<&Items> {
        self.items.get()
    }

    /// Serializes the items and drops the values. False when already packed
    /// or when they cannot be serialized (they then stay as they are).
    pub fn pack(&mut self) -> bool {
        let Some(items) = self.items.get() else { return false };
        // written straight as raw JSON: no second pass to validate the text
        let Ok(raw) = serde_json::value::to_raw_value(items.as_ref()) else { return false };
        self.packed = Some(raw);
        self.items = OnceLock::new();
        true
    }
}

/// Reads what [`OutputItems::pack`] wrote. Items nest deeper than
/// serde_json's parser allows by default (it refuses the 128th level; a Code
/// node returns 256 levels, a Set node's dotted names more), so the limit is
/// lifted and the parser runs on a stack that grows on the heap as needed:
/// what was packed reads back, as `store::data::stored_json` reads stored
/// run data (this crate does not link the store).
fn unpack(packed: &str) -> serde_json::Result<Vec<Item>> {
    let mut de = serde_json::Deserializer::from_str(packed);
    de.disable_recursion_limit();
    let items = Vec::<Item>::deserialize(serde_stacker::Deserializer::new(&mut de))?;
    de.end()?;
    Ok(items)
}

impl PartialEq for OutputItems {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.items() == other.items()
    }
}

impl Serialize for OutputItems {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.items.get(), &self.packed) {
            (Some(items), _) => items.serialize(s),
            (None, Some(raw)) => raw.serialize(s),
            (None, None) => Vec::<Item>::new().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for OutputItems {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(OutputItems::new(Arc::new(Vec::<Item>::deserialize(d)?)))
    }
}

/// One run of one node (`runData[node][runIndex]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskData {
    pub start_time: i64,
    pub execution_time: u64,
    pub execution_status: ExecutionStatus,
    #[serde(default)]
    pub source: Vec<Option<TaskSource>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<TaskOutputs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<NodeError>,
    /// Console lines a Code node wrote (n8n sends them to the browser console).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub console: Vec<String>,
    /// Item counts per output when lean run data released the items
    /// (`EngineSettings::lean_run_data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_items: Option<Vec<usize>>,
    /// Set when this run came from pin data or a replayed execution, not from executing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<RunOrigin>,
    /// Links to related executions (n8n's `ITaskMetadata`): the sub-execution
    /// an Execute Workflow node started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TaskMetadata>,
    /// A sub-node call's input (n8n's `inputOverride`): what its root handed
    /// it, under the sub-node's connection type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_override: Option<TaskOutputs>,
}

/// n8n's `ITaskMetadata` (the parts this engine sets).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_execution: Option<RelatedExecution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_executions_count: Option<usize>,
}

/// Another execution a run links to (n8n's `RelatedExecution`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedExecution {
    pub execution_id: String,
    pub workflow_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunOrigin {
    Pinned,
    Replayed,
    Mocked,
}

impl TaskData {
    /// Packs every output: for a copy kept beside the run (progress), so it
    /// holds text rather than the run's shared values.
    pub fn pack_outputs(&mut self) {
        for o in self.data.iter_mut().flat_map(|d| d.main.iter_mut().chain(d.other.values_mut().flatten()).flatten()) {
            o.pack();
        }
    }

    pub fn output(&self, output: usize) -> Option<&Items> {
        self.data.as_ref().and_then(|d| d.main.get(output)).and_then(|o| o.as_ref()).map(OutputItems::items)
    }
}

pub type RunData = BTreeMap<String, Vec<TaskData>>;

/// A node waiting to execute: its inputs and where they came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackEntry {
    pub node: String,
    pub inputs: Vec<Option<Items>>,
    pub source: Vec<Option<TaskSource>>,
    /// Set on the entry of a Wait node that already ran and is parked: on
    /// resume it outputs its input instead of waiting again.
    #[serde(default)]
    pub resume: bool,
}

/// Everything needed to continue an execution in another process.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionState {
    pub status: ExecutionStatus,
    pub run_data: RunData,
    #[serde(default)]
    pub pin_data: BTreeMap<String, Vec<Item>>,
    #[serde(default)]
    pub stack: VecDeque<StackEntry>,
    /// Multi-input nodes that have part of their inputs.
    #[serde(default)]
    pub waiting: Vec<StackEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_node_executed: Option<String>,
    /// ISO timestamp until which a `waiting` execution sleeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_till: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<NodeError>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub execution_id: String,
    #[serde(default = "empty_object")]
    pub static_data: Value,
    /// Per-node persistent context (Split In Batches' remaining items, ...).
    #[serde(default)]
    pub node_context: BTreeMap<String, Value>,
    /// Response a Respond to Webhook node produced, for the host to send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_response: Option<Value>,
    /// n8n's execution custom data (`resultData.metadata`), set by the
    /// Execution Data node: what the execution can be found by.
    #[serde(default, skip_serializing_if = "CustomData::is_empty")]
    pub custom_data: CustomData,
    /// Tokens the execution's chat models used (every AI node's calls).
    #[serde(default, skip_serializing_if = "TokenUsage::is_zero")]
    pub token_usage: TokenUsage,
}

/// Tokens of chat model calls, in n8n's `tokenUsage` shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl TokenUsage {
    pub fn is_zero(&self) -> bool {
        self.total_tokens == 0 && self.prompt_tokens == 0 && self.completion_tokens == 0
    }

    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// Execution custom data with n8n's limits: at most 10 keys (further new
/// keys are dropped), keys of letters, digits and `_` cut to 50 characters,
/// string or number values cut to 512 characters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CustomData(pub BTreeMap<String, String>);

impl CustomData {
    pub const MAX_KEYS: usize = 10;

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets one key, with n8n's error texts for a bad key or value.
    pub fn set(&mut self, key: &str, value: &Value) -> Result<(), String> {
        if !self.0.contains_key(key) && self.0.len() >= Self::MAX_KEYS {
            return Ok(());
        }
        if !key.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(format!("Custom data key can only contain letters, numbers, and underscores (key \"{key}\")"));
        }
        let value = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(format!("Custom data values must be a string (key \"{key}\")")),
        };
        self.0.insert(key.chars().take(50).collect(), value.chars().take(512).collect());
        Ok(())
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl ExecutionState {
    pub fn new(execution_id: String) -> Self {
        ExecutionState {
            status: ExecutionStatus::New,
            run_data: RunData::new(),
            pin_data: BTreeMap::new(),
            stack: VecDeque::new(),
            waiting: vec![],
            last_node_executed: None,
            wait_till: None,
            error: None,
            started_at: now_iso(),
            finished_at: None,
            execution_id,
            static_data: empty_object(),
            node_context: BTreeMap::new(),
            webhook_response: None,
            custom_data: CustomData::default(),
            token_usage: TokenUsage::default(),
        }
    }

    /// Items of a node's last run on `output` (what `get-node-output` reads).
    pub fn node_output(&self, node: &str, output: usize) -> Option<&Items> {
        self.run_data.get(node).and_then(|r| r.last()).and_then(|t| t.output(output))
    }
}

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
