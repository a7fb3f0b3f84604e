//! The approval copy of data-table changes, built from the tool input alone
//! (spec: "Approval copy"): a plain-text `message` for older clients and
//! structured `approvalDetails` for the card. Insert previews show at most
//! [`PREVIEW_ROWS`] rows × [`PREVIEW_COLUMNS`] columns, each value as JSON
//! cut to [`PREVIEW_VALUE_CHARS`] characters (quotes included), and say how
//! many rows and columns they leave out. Filters are put into words; a bare
//! `like`/`ilike` value reads as "contains", as the store matches it.

use serde_json::{json, Map, Value};
use store::data::data_tables::{Condition, Filter, FilterKind, Op};

pub const PREVIEW_ROWS: usize = 3;
pub const PREVIEW_COLUMNS: usize = 5;
pub const PREVIEW_VALUE_CHARS: usize = 100;

/// A value as the card shows it: JSON, cut with `…` past the limit; `None` for null.
pub fn preview_value(v: &Value) -> Option<String> {
    if v.is_null() {
        return None;
    }
    let text = v.to_string();
    Some(if text.chars().count() > PREVIEW_VALUE_CHARS {
        let cut: String = text.chars().take(PREVIEW_VALUE_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    })
}

/// `{values: [{column, value}], remainingColumns}` for one row (or one update).
pub fn preview_row(row: &Map<String, Value>) -> Value {
    let values: Vec<Value> =
        row.iter().take(PREVIEW_COLUMNS).map(|(c, v)| json!({"column": c, "value": preview_value(v)})).collect();
    json!({"values": values, "remainingColumns": row.len().saturating_sub(PREVIEW_COLUMNS)})
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `"a" to "x", "b" to no value, 2 more columns`.
pub fn describe_changes(row: &Map<String, Value>) -> String {
    let mut parts: Vec<String> = row
        .iter()
        .take(PREVIEW_COLUMNS)
        .map(|(c, v)| format!("\"{c}\" to {}", preview_value(v).unwrap_or_else(|| "no value".into())))
        .collect();
    let more = row.len().saturating_sub(PREVIEW_COLUMNS);
    if more > 0 {
        parts.push(format!("{more} more {}", if more == 1 { "column" } else { "columns" }));
    }
    parts.join(", ")
}

fn describe_condition(c: &Condition) -> String {
    let col = &c.column_name;
    let value = || c.value.to_string();
    match c.condition {
        Op::Eq if c.value.is_null() => format!("\"{col}\" has no value"),
        Op::Neq if c.value.is_null() => format!("\"{col}\" has a value"),
        Op::IsEmpty => format!("\"{col}\" is empty"),
        Op::IsNotEmpty => format!("\"{col}\" is not empty"),
        Op::Like | Op::Ilike if c.value.as_str().is_some_and(|s| !s.contains('%')) => {
            let case = if c.condition == Op::Ilike { "ignoring case" } else { "matching case" };
            format!("\"{col}\" contains {} ({case})", value())
        }
        Op::Eq => format!("\"{col}\" is {}", value()),
        Op::Neq => format!("\"{col}\" is not {}", value()),
        Op::Like => format!("\"{col}\" matches the text pattern {}", value()),
        Op::Ilike => format!("\"{col}\" matches the text pattern {} (ignoring case)", value()),
        Op::Gt => format!("\"{col}\" is greater than {}", value()),
        Op::Gte => format!("\"{col}\" is greater than or equal to {}", value()),
        Op::Lt => format!("\"{col}\" is less than {}", value()),
        Op::Lte => format!("\"{col}\" is less than or equal to {}", value()),
    }
}

/// The filter in words: `"status" is "lead" and "email" contains "acme" (ignoring case)`.
pub fn describe_filter(f: &Filter) -> String {
    let joiner = match f.kind {
        FilterKind::And => " and ",
        FilterKind::Or => " or ",
    };
    f.conditions.iter().map(describe_condition).collect::<Vec<_>>().join(joiner)
}

/// The filter as the card renders it: its conditions plus their wording.
fn filter_details(f: &Filter) -> Value {
    json!({
        "type": f.kind,
        "filters": f.conditions,
        "description": describe_filter(f),
    })
}

/// `(message, approvalDetails)` for inserting `rows`.
pub fn insert_rows(rows: &[Map<String, Value>]) -> (String, Value) {
    let shown: Vec<&Map<String, Value>> = rows.iter().take(PREVIEW_ROWS).collect();
    let mut lines: Vec<String> = shown
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let changes = describe_changes(r);
            if changes.is_empty() {
                format!("Row {}: no column values supplied", i + 1)
            } else {
                format!("Row {}: set {changes}", i + 1)
            }
        })
        .collect();
    let remaining = rows.len() - shown.len();
    if remaining > 0 {
        lines.push(format!("{remaining} more {}", if remaining == 1 { "row" } else { "rows" }));
    }
    let message = format!("Add {}\n\n{}", plural(rows.len(), "row", "rows"), lines.join("\n\n"));
    let details = json!({
        "action": "insert-rows",
        "count": rows.len(),
        "rows": shown.iter().map(|r| preview_row(r)).collect::<Vec<_>>(),
        "remainingRows": remaining,
    });
    (message, details)
}

/// `(message, approvalDetails)` for setting `data` on the rows matching `filter`.
pub fn update_rows(filter: &Filter, data: &Map<String, Value>) -> (String, Value) {
    let message = format!("Set {} in rows where {}", describe_changes(data), describe_filter(filter));
    (message, json!({"action": "update-rows", "changes": preview_row(data), "filter": filter_details(filter)}))
}

/// `(message, approvalDetails)` for deleting the rows matching `filter`.
pub fn delete_rows(filter: &Filter) -> (String, Value) {
    (format!("Delete rows where {}", describe_filter(filter)), json!({"action": "delete-rows", "filter": filter_details(filter)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn cond(col: &str, op: Op, value: Value) -> Condition {
        Condition { column_name: col.into(), condition: op, value }
    }

    #[test]
    fn insert_previews_three_rows_of_five_columns_and_counts_the_rest() {
        let long = "x".repeat(150);
        let rows: Vec<Map<String, Value>> = (0..7)
            .map(|i| row(json!({"a": i, "b": "two", "c": null, "d": true, "e": long, "f": 6, "g": [7]})))
            .collect();
        let (message, d) = insert_rows(&rows);
        assert_eq!(d["action"], "insert-rows");
        assert_eq!(d["count"], 7);
        assert_eq!(d["remainingRows"], 4);
        let shown = d["rows"].as_array().unwrap();
        assert_eq!(shown.len(), 3);
        assert_eq!(shown[0]["remainingColumns"], 2);
        let values = shown[0]["values"].as_array().unwrap();
        assert_eq!(values.len(), 5);
        assert_eq!(values[0], json!({"column": "a", "value": "0"}));
        assert_eq!(values[1], json!({"column": "b", "value": "\"two\""}), "JSON-formatted, with quotes");
        assert_eq!(values[2]["value"], Value::Null);
        let cut = values[4]["value"].as_str().unwrap();
        assert_eq!(cut.chars().count(), 101, "100 characters and the ellipsis");
        assert!(cut.starts_with("\"xxx") && cut.ends_with('…'));
        assert!(message.starts_with("Add 7 rows\n\nRow 1: set \"a\" to 0, \"b\" to \"two\", \"c\" to no value"), "{message}");
        assert!(message.contains("2 more columns"), "{message}");
        assert!(message.ends_with("4 more rows"), "{message}");
        assert!(!message.contains("Row 4"));
    }

    #[test]
    fn a_value_of_exactly_one_hundred_characters_is_not_cut() {
        let s = Value::String("y".repeat(98));
        assert_eq!(preview_value(&s).unwrap().chars().count(), 100);
        let (m, d) = insert_rows(&[row(json!({"only": 1}))]);
        assert_eq!(d["remainingRows"], 0);
        assert_eq!(m, "Add 1 row\n\nRow 1: set \"only\" to 1");
    }

    #[test]
    fn filters_read_as_words() {
        let f = Filter {
            kind: FilterKind::And,
            conditions: vec![
                cond("email", Op::Ilike, json!("acme")),
                cond("name", Op::Like, json!("Jo%")),
                cond("score", Op::Gte, json!(10)),
                cond("note", Op::Eq, Value::Null),
                cond("tag", Op::IsNotEmpty, Value::Null),
            ],
        };
        assert_eq!(
            describe_filter(&f),
            "\"email\" contains \"acme\" (ignoring case) and \"name\" matches the text pattern \"Jo%\" and \"score\" is greater than or equal to 10 and \"note\" has no value and \"tag\" is not empty"
        );
        let or = Filter { kind: FilterKind::Or, conditions: vec![cond("a", Op::Like, json!("x")), cond("b", Op::Neq, json!(false))] };
        assert_eq!(describe_filter(&or), "\"a\" contains \"x\" (matching case) or \"b\" is not false");
        let (m, d) = delete_rows(&or);
        assert_eq!(m, "Delete rows where \"a\" contains \"x\" (matching case) or \"b\" is not false");
        assert_eq!(d["filter"]["type"], "or");
        assert_eq!(d["filter"]["filters"][0], json!({"columnName": "a", "condition": "like", "value": "x"}));
        let (m, d) = update_rows(&or, &row(json!({"status": "won", "score": null})));
        assert_eq!(m, "Set \"status\" to \"won\", \"score\" to no value in rows where \"a\" contains \"x\" (matching case) or \"b\" is not false");
        assert_eq!(d["changes"]["values"][0], json!({"column": "status", "value": "\"won\""}));
    }
}
