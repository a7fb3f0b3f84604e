//! The item type nodes pass around, laid out for sharing: an item's `json`
//! (and `binary`) is reference-counted and copied only when written
//! ([`Json`] is copy-on-write), and `pairedItem` is a small enum for the
//! shapes the engine writes. Serialized, an item is exactly n8n's
//! `{json, binary?, pairedItem?}`.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One n8n item: `{json, binary?, pairedItem?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Item {
    pub json: Json,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<Json>,
    #[serde(rename = "pairedItem", default, skip_serializing_if = "Option::is_none")]
    pub paired_item: Option<PairedItem>,
}

impl Item {
    /// An item with this `json` and nothing else.
    pub fn new(json: impl Into<Json>) -> Self {
        Item { json: json.into(), binary: None, paired_item: None }
    }

    /// The same item (sharing its data) with `pairedItem` pointing at item
    /// `item` of input `input`.
    pub fn paired(&self, item: usize, input: usize) -> Item {
        Item { json: self.json.clone(), binary: self.binary.clone(), paired_item: Some(PairedItem::new(item, input)) }
    }
}

/// A JSON value shared between the items that hold it (the output of a node
/// and the run data of the nodes it passed through). Reads go through
/// `Deref<Target = Value>`; a write (`DerefMut`) copies the value first when
/// it is shared, so no other holder ever sees the change.
#[derive(Clone, Default)]
pub struct Json(Arc<Value>);

impl Json {
    pub fn new(v: Value) -> Self {
        Json(Arc::new(v))
    }

    /// The value, without a copy when this is the only holder.
    pub fn into_value(self) -> Value {
        Arc::try_unwrap(self.0).unwrap_or_else(|a| (*a).clone())
    }

    /// Takes the value out (leaving `null`), copying only when shared.
    pub fn take(&mut self) -> Value {
        std::mem::take(self).into_value()
    }

    /// The value for writing: copied first when shared (`Arc::make_mut`).
    pub fn make_mut(&mut self) -> &mut Value {
        Arc::make_mut(&mut self.0)
    }

    /// True when nothing else holds this value (a write will not copy it).
    pub fn is_unique(this: &Json) -> bool {
        Arc::strong_count(&this.0) == 1 && Arc::weak_count(&this.0) == 0
    }

    /// How many holders share this value (items, in any node's run data).
    pub fn holders(this: &Json) -> usize {
        Arc::strong_count(&this.0)
    }

    /// Identity of the shared value, to count its holders in a set of items.
    pub fn addr(this: &Json) -> usize {
        Arc::as_ptr(&this.0) as usize
    }

    /// True when both hold the very same value (no comparison of contents).
    pub fn ptr_eq(a: &Json, b: &Json) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// A copy of the object with `extra` more free slots, for a node that
    /// adds fields: cloning a map and inserting into it would grow its
    /// storage to the next power of two. Non-objects are cloned as they are.
    pub fn object_with_room(&self, extra: usize) -> Value {
        match &*self.0 {
            Value::Object(m) => {
                let mut out = Map::with_capacity(m.len() + extra);
                for (k, v) in m {
                    out.insert(k.clone(), v.clone());
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }
}

impl Deref for Json {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl DerefMut for Json {
    fn deref_mut(&mut self) -> &mut Value {
        Arc::make_mut(&mut self.0)
    }
}

impl AsRef<Value> for Json {
    fn as_ref(&self) -> &Value {
        &self.0
    }
}

impl From<Value> for Json {
    fn from(v: Value) -> Self {
        Json::new(v)
    }
}

impl From<Map<String, Value>> for Json {
    fn from(m: Map<String, Value>) -> Self {
        Json::new(Value::Object(m))
    }
}

impl From<Json> for Value {
    fn from(j: Json) -> Self {
        j.into_value()
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl PartialEq<Value> for Json {
    fn eq(&self, other: &Value) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<Json> for Value {
    fn eq(&self, other: &Json) -> bool {
        *self == *other.0
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Json::new)
    }
}

/// An item's `pairedItem`: the input item it came from. The engine writes a
/// bare number for input 0 and `{"item", "input"}` otherwise; any other shape
/// read from outside (arrays, extra keys) is kept as it was given.
#[derive(Clone, PartialEq)]
pub enum PairedItem {
    /// `3`
    Index(usize),
    /// `{"item": 3, "input": 1}`
    Ref { item: u32, input: u32 },
    /// Anything else, verbatim.
    Other(Box<Value>),
}

impl PairedItem {
    /// Item `item` of input `input` in the engine's shape.
    pub fn new(item: usize, input: usize) -> Self {
        match (input, u32::try_from(item), u32::try_from(input)) {
            (0, _, _) => PairedItem::Index(item),
            (_, Ok(item), Ok(input)) => PairedItem::Ref { item, input },
            _ => PairedItem::Other(Box::new(serde_json::json!({ "item": item, "input": input }))),
        }
    }

    /// Reads any JSON `pairedItem`; the compact forms only where they
    /// serialize back to the same text.
    pub fn from_value(v: Value) -> Self {
        match &v {
            Value::Number(n) => {
                if let Some(i) = n.as_u64().and_then(|i| usize::try_from(i).ok()) {
                    return PairedItem::Index(i);
                }
            }
            Value::Object(m) if m.len() == 2 => {
                let mut keys = m.keys();
                if keys.next().map(String::as_str) == Some("item") && keys.next().map(String::as_str) == Some("input") {
                    let item = m.get("item").and_then(Value::as_u64).and_then(|x| u32::try_from(x).ok());
                    let input = m.get("input").and_then(Value::as_u64).and_then(|x| u32::try_from(x).ok());
                    if let (Some(item), Some(input)) = (item, input) {
                        return PairedItem::Ref { item, input };
                    }
                }
            }
            _ => {}
        }
        PairedItem::Other(Box::new(v))
    }

    /// The JSON form (what n8n stores).
    pub fn to_value(&self) -> Value {
        match self {
            PairedItem::Index(i) => Value::from(*i),
            PairedItem::Ref { item, input } => serde_json::json!({ "item": item, "input": input }),
            PairedItem::Other(v) => (**v).clone(),
        }
    }

    /// `(item, input)` this points at, as n8n resolves it: a number, an
    /// `{item, input?}` object, or the first of an array of those.
    pub fn target(&self) -> (usize, usize) {
        match self {
            PairedItem::Index(i) => (*i, 0),
            PairedItem::Ref { item, input } => (*item as usize, *input as usize),
            PairedItem::Other(v) => {
                let p = match &**v {
                    Value::Array(a) => a.first().unwrap_or(&Value::Null),
                    other => other,
                };
                match p {
                    Value::Number(n) => (n.as_u64().unwrap_or(0) as usize, 0),
                    Value::Object(o) => (
                        o.get("item").and_then(|v| v.as_u64()).unwrap_or(0) as usize,
                        o.get("input").and_then(|v| v.as_u64()).unwrap_or(0) as usize,
                    ),
                    _ => (0, 0),
                }
            }
        }
    }
}

impl From<Value> for PairedItem {
    fn from(v: Value) -> Self {
        PairedItem::from_value(v)
    }
}

impl PartialEq<Value> for PairedItem {
    fn eq(&self, other: &Value) -> bool {
        match self {
            PairedItem::Other(v) => **v == *other,
            _ => self.to_value() == *other,
        }
    }
}

impl fmt::Debug for PairedItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_value(), f)
    }
}

impl Serialize for PairedItem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PairedItem::Index(i) => s.serialize_u64(*i as u64),
            PairedItem::Ref { item, input } => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("item", item)?;
                m.serialize_entry("input", input)?;
                m.end()
            }
            PairedItem::Other(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PairedItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(PairedItem::from_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_serialize_in_n8n_shape() {
        for text in [
            r#"{"json":{"a":1}}"#,
            r#"{"json":{"a":1},"pairedItem":0}"#,
            r#"{"json":{},"pairedItem":{"item":2,"input":1}}"#,
            r#"{"json":{},"pairedItem":{"input":1,"item":2}}"#,
            r#"{"json":{},"pairedItem":{"item":2}}"#,
            r#"{"json":{},"pairedItem":[{"item":0},{"item":1}]}"#,
            r#"{"json":{},"binary":{"data":{"mimeType":"text/plain"}},"pairedItem":-1}"#,
        ] {
            let it: Item = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&it).unwrap(), text);
        }
    }

    #[test]
    fn json_is_copy_on_write() {
        let a = Item::new(json!({"x": 1}));
        let mut b = a.paired(0, 0);
        assert!(Json::ptr_eq(&a.json, &b.json));
        b.json["y"] = json!(2);
        assert_eq!(a.json, json!({"x": 1}));
        assert_eq!(b.json, json!({"x": 1, "y": 2}));
    }

    #[test]
    fn paired_item_shapes() {
        assert_eq!(PairedItem::new(3, 0), json!(3));
        assert_eq!(PairedItem::new(3, 1), json!({"item": 3, "input": 1}));
        assert_eq!(PairedItem::from_value(json!([{"item": 4}])).target(), (4, 0));
        assert_eq!(PairedItem::from_value(json!({"item": 4, "input": 2})).target(), (4, 2));
        assert_eq!(std::mem::size_of::<Item>(), 32);
    }
}
