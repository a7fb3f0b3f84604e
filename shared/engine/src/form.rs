//! n8n forms: the definition a Form Trigger (or a Wait node "on form
//! submitted") describes, and the item a submission becomes. Rendering the
//! page is the host's; this module knows n8n's parameters and output shape.
//!
//! Fields are posted as `field-<index>` (n8n's form page does the same), so
//! a submission maps back to its definition by position.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::data::Item;
use crate::webhook::{binary_data, UploadedFile};
use crate::workflow::Node;

/// n8n's field types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FieldType {
    Text,
    Textarea,
    Email,
    Number,
    Password,
    Date,
    Dropdown,
    Checkbox,
    Radio,
    File,
    /// Custom HTML shown on the page; submits nothing.
    Html,
    /// Not shown; submits its value (or a `?name=` query parameter).
    HiddenField,
}

impl FieldType {
    fn parse(s: &str) -> Option<FieldType> {
        Some(match s {
            "text" | "string" | "" => FieldType::Text,
            "textarea" => FieldType::Textarea,
            "email" => FieldType::Email,
            "number" => FieldType::Number,
            "password" => FieldType::Password,
            "date" => FieldType::Date,
            "dropdown" => FieldType::Dropdown,
            "checkbox" => FieldType::Checkbox,
            "radio" => FieldType::Radio,
            "file" => FieldType::File,
            "html" => FieldType::Html,
            "hiddenField" => FieldType::HiddenField,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormField {
    /// What the field is posted as: `field-<index>`.
    pub key: String,
    pub label: String,
    pub field_type: FieldType,
    pub required: bool,
    pub placeholder: Option<String>,
    pub options: Vec<String>,
    /// Dropdown with several choices.
    pub multiselect: bool,
    pub multiple_files: bool,
    pub accept_file_types: Option<String>,
    /// `html` fields: the markup; hidden fields: their value.
    pub value: Option<String>,
    /// Hidden field name, or the output key of an html field.
    pub name: Option<String>,
    pub limit_selection: Option<(Option<u32>, Option<u32>)>,
}

/// What happens after a submission the workflow answers itself
/// (`onReceived`): a text, or a redirect.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Completion {
    Text { title: String, text: String },
    Redirect { url: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormDefinition {
    pub title: String,
    pub description: String,
    pub fields: Vec<FormField>,
    pub button_label: String,
    pub completion: Completion,
    pub append_attribution: bool,
    /// The workflow's timezone is used for `submittedAt` (else UTC).
    pub use_workflow_timezone: bool,
}

/// Why a submission is refused (shown on the page, nothing runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionError(pub String);

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

impl FormDefinition {
    /// A Form Trigger's (any version) or a form-resumed Wait node's form.
    pub fn of(node: &Node) -> Result<FormDefinition, String> {
        let p = &node.parameters;
        let options = p.get("options").cloned().unwrap_or_else(|| json!({}));
        let fields = p
            .pointer("/formFields/values")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, f)| field(i, f))
            .collect::<Result<Vec<_>, _>>()?;
        let respond = options.pointer("/respondWithOptions/values");
        let text = respond
            .and_then(|r| s(r, "formSubmittedText"))
            .or_else(|| s(&options, "formSubmittedText"))
            .or_else(|| s(p, "formSubmittedText"))
            .unwrap_or("Your response has been recorded")
            .to_owned();
        let completion = match respond.and_then(|r| s(r, "respondWith")) {
            Some("redirect") => Completion::Redirect {
                url: respond.and_then(|r| s(r, "redirectUrl")).unwrap_or_default().to_owned(),
            },
            _ => Completion::Text {
                title: s(&options, "formSubmittedHeader").unwrap_or("Form Submitted").to_owned(),
                text,
            },
        };
        Ok(FormDefinition {
            title: s(p, "formTitle").unwrap_or_default().to_owned(),
            description: s(p, "formDescription").unwrap_or_default().to_owned(),
            fields,
            button_label: s(&options, "buttonLabel").filter(|b| !b.is_empty()).unwrap_or("Submit").to_owned(),
            completion,
            append_attribution: options.get("appendAttribution").and_then(Value::as_bool).unwrap_or(true),
            use_workflow_timezone: options.get("useWorkflowTimezone").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    /// The trigger item for a submission: each field under its label,
    /// `submittedAt` and `formMode`, files as binary. Required fields that
    /// were left empty refuse the submission.
    pub fn submission_item(
        &self,
        fields: &Map<String, Value>,
        files: &[UploadedFile],
        query: &Map<String, Value>,
        mode: &str,
        timezone: &str,
    ) -> Result<Item, SubmissionError> {
        let mut json = Map::new();
        let mut binary = Map::new();
        for f in &self.fields {
            // A file input left empty is a 0-byte part named "" (n8n skips it).
            let own_files: Vec<&UploadedFile> = files
                .iter()
                .filter(|u| u.field == f.key && !(u.data.is_empty() && u.file_name.as_deref().unwrap_or_default().is_empty()))
                .collect();
            let raw = fields.get(&f.key).cloned().or_else(|| {
                // A hidden field may come from the page's query string.
                (f.field_type == FieldType::HiddenField)
                    .then(|| f.name.as_ref().and_then(|n| query.get(n)).cloned().or(f.value.clone().map(Value::String)))
                    .flatten()
            });
            let empty = match &raw {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.trim().is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if f.required && f.field_type != FieldType::File && empty {
                return Err(SubmissionError(format!("\"{}\" is required", f.label)));
            }
            if f.required && f.field_type == FieldType::File && own_files.is_empty() {
                return Err(SubmissionError(format!("\"{}\" is required", f.label)));
            }
            let out_key = match f.field_type {
                FieldType::HiddenField => f.name.clone().unwrap_or_else(|| f.label.clone()),
                _ => f.label.clone(),
            };
            let value = match f.field_type {
                FieldType::Html => continue,
                FieldType::File => {
                    if own_files.is_empty() {
                        Value::Null
                    } else {
                        let meta: Vec<Value> = own_files
                            .iter()
                            .map(|u| json!({"filename": u.file_name, "mimetype": u.mime_type, "size": u.data.len()}))
                            .collect();
                        for (i, u) in own_files.iter().enumerate() {
                            let name = if own_files.len() > 1 || f.multiple_files { format!("{}_{i}", f.key) } else { f.key.clone() };
                            binary.insert(name, binary_data(&u.data, u.file_name.as_deref(), &u.mime_type));
                        }
                        if f.multiple_files || meta.len() > 1 {
                            Value::Array(meta)
                        } else {
                            meta.into_iter().next().unwrap_or(Value::Null)
                        }
                    }
                }
                _ if empty => Value::Null,
                FieldType::Number => {
                    let text = as_text(raw.as_ref());
                    match text.trim().parse::<f64>() {
                        Ok(n) => json!(n),
                        Err(_) => return Err(SubmissionError(format!("\"{}\" must be a number", f.label))),
                    }
                }
                FieldType::Text | FieldType::Email => Value::String(as_text(raw.as_ref()).trim().to_owned()),
                FieldType::Checkbox => Value::Array(choices(raw.as_ref())),
                FieldType::Dropdown if f.multiselect => Value::Array(choices(raw.as_ref())),
                FieldType::Radio | FieldType::Dropdown => {
                    choices(raw.as_ref()).into_iter().next().unwrap_or(Value::Null)
                }
                _ => Value::String(as_text(raw.as_ref())),
            };
            if let (FieldType::Dropdown | FieldType::Radio | FieldType::Checkbox, Some(bad)) =
                (f.field_type, first_unknown(&value, &f.options))
            {
                return Err(SubmissionError(format!("\"{bad}\" is not an option of \"{}\"", f.label)));
            }
            json.insert(out_key, value);
        }
        let tz = if self.use_workflow_timezone { timezone } else { "UTC" };
        json.insert("submittedAt".into(), json!(now_in(tz)));
        json.insert("formMode".into(), json!(mode));
        if !query.is_empty() {
            json.insert("formQueryParameters".into(), Value::Object(query.clone()));
        }
        let mut item = Item::new(Value::Object(json));
        if !binary.is_empty() {
            item.binary = Some(Value::Object(binary).into());
        }
        Ok(item)
    }
}

fn first_unknown(v: &Value, options: &[String]) -> Option<String> {
    if options.is_empty() {
        return None;
    }
    let vals: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        Value::Null => vec![],
        other => vec![other],
    };
    vals.into_iter().filter_map(Value::as_str).find(|s| !options.iter().any(|o| o == s)).map(str::to_owned)
}

fn as_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a.first().map(|x| as_text(Some(x))).unwrap_or_default(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Selected options: repeated form values, or the JSON array n8n's page posts.
fn choices(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(a)) => a.iter().flat_map(|x| choices(Some(x))).collect(),
        Some(Value::String(s)) if s.trim_start().starts_with('[') => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(a)) => a,
            _ => vec![Value::String(s.clone())],
        },
        Some(Value::String(s)) if s.is_empty() => vec![],
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Null) | None => vec![],
        Some(other) => vec![other.clone()],
    }
}

fn now_in(tz: &str) -> String {
    let now = chrono::Utc::now();
    // Luxon writes `Z` for the fixed UTC zone, an offset for named zones.
    match expression::tz::Tz::get(tz) {
        Some(tz) if !matches!(tz.name(), "UTC" | "Etc/UTC" | "GMT" | "Etc/GMT") => {
            now.with_timezone(&tz).to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
        }
        _ => now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }
}

fn field(index: usize, f: &Value) -> Result<FormField, String> {
    let type_name = s(f, "fieldType").unwrap_or("text");
    let field_type = FieldType::parse(type_name).ok_or_else(|| format!("form field type \"{type_name}\" is not supported"))?;
    let options = f
        .pointer("/fieldOptions/values")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|o| s(o, "option").map(str::to_owned)).collect())
        .unwrap_or_default();
    let label = s(f, "fieldLabel")
        .or_else(|| s(f, "fieldName"))
        .map(str::to_owned)
        .unwrap_or_else(|| format!("field-{index}"));
    let limit = (f.get("limitSelection").and_then(Value::as_str) == Some("range")).then(|| {
        (
            f.get("minSelections").and_then(Value::as_u64).map(|n| n as u32),
            f.get("maxSelections").and_then(Value::as_u64).map(|n| n as u32),
        )
    });
    Ok(FormField {
        key: format!("field-{index}"),
        label,
        field_type,
        required: f.get("requiredField").and_then(Value::as_bool).unwrap_or(false),
        placeholder: s(f, "placeholder").map(str::to_owned),
        options,
        multiselect: f.get("multiselect").and_then(Value::as_bool).unwrap_or(false),
        multiple_files: f.get("multipleFiles").and_then(Value::as_bool).unwrap_or(true),
        accept_file_types: s(f, "acceptFileTypes").map(str::to_owned),
        value: s(f, "html").or_else(|| s(f, "fieldValue")).map(str::to_owned),
        name: s(f, "fieldName").or_else(|| s(f, "elementName")).map(str::to_owned),
        limit_selection: limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> FormDefinition {
        let node: Node = serde_json::from_value(json!({
            "name": "Form", "type": "n8n-nodes-base.formTrigger", "typeVersion": 2.2,
            "parameters": {"formTitle": "Contact", "formFields": {"values": [
                {"fieldLabel": "Name", "requiredField": true},
                {"fieldLabel": "Age", "fieldType": "number"},
                {"fieldLabel": "Topics", "fieldType": "checkbox", "fieldOptions": {"values": [{"option": "a"}, {"option": "b"}]}},
                {"fieldLabel": "Size", "fieldType": "dropdown", "fieldOptions": {"values": [{"option": "S"}, {"option": "L"}]}}
            ]}}
        }))
        .unwrap();
        FormDefinition::of(&node).unwrap()
    }

    #[test]
    fn a_submission_becomes_labelled_fields() {
        let mut fields = Map::new();
        fields.insert("field-0".into(), json!(" Ada "));
        fields.insert("field-1".into(), json!("36"));
        fields.insert("field-2".into(), json!(["a", "b"]));
        fields.insert("field-3".into(), json!("L"));
        let item = def().submission_item(&fields, &[], &Map::new(), "production", "UTC").unwrap();
        assert_eq!(item.json["Name"], "Ada");
        assert_eq!(item.json["Age"], 36.0);
        assert_eq!(item.json["Topics"], json!(["a", "b"]));
        assert_eq!(item.json["Size"], "L");
        assert_eq!(item.json["formMode"], "production");
        assert!(item.json["submittedAt"].as_str().is_some_and(|t| t.ends_with('Z')));
    }

    #[test]
    fn required_and_unknown_options_are_refused() {
        let err = def().submission_item(&Map::new(), &[], &Map::new(), "production", "UTC").unwrap_err();
        assert!(err.0.contains("Name"), "{err:?}");
        let mut fields = Map::new();
        fields.insert("field-0".into(), json!("x"));
        fields.insert("field-3".into(), json!("XL"));
        let err = def().submission_item(&fields, &[], &Map::new(), "production", "UTC").unwrap_err();
        assert!(err.0.contains("XL"), "{err:?}");
    }
}
