//! `data-tables`: the eleven actions of the spec over `instance::data_tables`.
//! This module maps arguments and shapes results; every operation lives in
//! `instance`. Changes ask first (the admin policy `data-tables.<action>`,
//! a session grant per action): the gate checks the caller may make the
//! change, then builds the card from the input ([`super::data_table_card`]),
//! naming the table by `dataTableName` when given. Row values come from
//! outside and reach the model inside an `<untrusted_data>` envelope.

use super::data_table_card as card;
use super::untrusted::json_envelope;
use super::{Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use instance::data_tables::TableRef;
use instance::InstanceError;
use protocol::events::{ConfirmationRequest, Severity};
use serde::Deserialize;
use super::schema::action_variant as action;
use serde_json::{json, Map, Value};
use store::data::data_tables::{ColumnType, DataTable, Filter, NewColumn, RowQuery};

pub struct DataTables;

const NAME: &str = "data-tables";

const DESCRIPTION: &str = "Manage data tables: list, schema, query rows; and — after the user approves — create, delete, \
add-column, delete-column, rename-column, insert-rows, update-rows, delete-rows. System columns id, createdAt and \
updatedAt are set automatically. Call schema before using a table in workflow code. Keep queries targeted (a filter \
and a small limit); query results include the total matching count, so limit 1 is enough to check existence.";

/// Rows one query returns by default, and at most.
pub const DEFAULT_QUERY_LIMIT: usize = 50;
pub const MAX_QUERY_LIMIT: usize = 100;
/// Rows one insert takes (larger loads are several calls).
pub const MAX_INSERT_ROWS: usize = 100;
/// Cell text longer than this is cut in query results unless full values are asked for.
pub const MAX_CELL_CHARS: usize = 1024;
/// Rows a query with `fullCellValues` returns at most.
pub const MAX_FULL_VALUE_ROWS: usize = 5;

const TABLE_ID_DOC: &str = "ID of the data table (a name also works, but pass the id when you have it)";
const TABLE_NAME_DOC: &str = "Data table name, for the approval card: pass it whenever you know it so the user sees a name instead of an ID";
const PROJECT_DOC: &str = "Project ID. Scopes list and create (default: the conversation's project); for the other actions it narrows a table given by name";
const COLUMN_NAME_DOC: &str = "Current column name, for the approval card: pass it whenever you know it so the user sees a name instead of an ID";
const FILTER_DOC: &str = "Row filter. For text matching use ilike (case-insensitive contains) or like (case-sensitive); a value without % matches anywhere in the text (%value%), a value with % keeps its pattern (_ is one character). isEmpty / isNotEmpty take no value";

fn column_type_schema() -> Value {
    json!({"type": "string", "enum": ["string", "number", "boolean", "date"], "description": "Column data type (date values are ISO 8601 strings)"})
}

fn filter_schema(min_conditions: u64) -> Value {
    json!({
        "type": "object",
        "description": FILTER_DOC,
        "properties": {
            "type": {"type": "string", "enum": ["and", "or"], "description": "Combine the conditions with AND (default) or OR"},
            "filters": {
                "type": "array",
                "minItems": min_conditions,
                "description": "The conditions",
                "items": {
                    "type": "object",
                    "properties": {
                        "columnName": {"type": "string", "minLength": 1, "description": "Column to test (system columns id, createdAt, updatedAt too)"},
                        "condition": {"type": "string", "enum": ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "isEmpty", "isNotEmpty"], "description": "Comparison"},
                        "value": {"type": ["string", "number", "boolean", "null"], "description": "Value to compare with (null: no value)"}
                    },
                    "required": ["columnName", "condition"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["filters"],
        "additionalProperties": false
    })
}

/// The table fields every table action shares, plus its own.
fn on_table(extra: Value) -> Value {
    let mut props = json!({
        "dataTableId": {"type": "string", "minLength": 1, "description": TABLE_ID_DOC},
        "dataTableName": {"type": "string", "description": TABLE_NAME_DOC},
        "projectId": {"type": "string", "description": PROJECT_DOC},
    });
    if let (Some(p), Value::Object(e)) = (props.as_object_mut(), extra) {
        p.extend(e);
    }
    props
}

fn schema() -> Value {
    json!({"oneOf": [
        action("list", "List the data tables of a project", json!({
            "projectId": {"type": "string", "description": PROJECT_DOC}
        }), &[]),
        action("schema", "The columns of a data table (id, name, type, position)", on_table(json!({})), &["dataTableId"]),
        action("query", "Query rows, optionally filtered; results carry the total matching count", on_table(json!({
            "filter": filter_schema(0),
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_QUERY_LIMIT, "description": "Max rows to return (1–100, default 50)"},
            "offset": {"type": "integer", "minimum": 0, "description": "Matching rows to skip (default 0)"},
            "fullCellValues": {"type": "boolean", "description": "Return cell values longer than 1024 characters uncut; needs a filter matching the rows you need, and returns at most 5 rows (default 1)"}
        })), &["dataTableId"]),
        action("create", "Create a data table with typed columns. Asks the user first", json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Table name (unique in the project)"},
            "projectId": {"type": "string", "description": PROJECT_DOC},
            "columns": {"type": "array", "minItems": 1, "description": "Column definitions", "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 63, "description": "Column name: starts with a letter; letters, digits and underscores"},
                    "type": column_type_schema()
                },
                "required": ["name", "type"],
                "additionalProperties": false
            }}
        }), &["name", "columns"]),
        action("delete", "Permanently delete a data table and all its rows. Asks the user first", on_table(json!({})), &["dataTableId"]),
        action("add-column", "Add a column to a data table. Asks the user first", on_table(json!({
            "columnName": {"type": "string", "minLength": 1, "maxLength": 63, "description": "Column name: starts with a letter; letters, digits and underscores"},
            "type": column_type_schema()
        })), &["dataTableId", "columnName", "type"]),
        action("delete-column", "Delete a column and its values. Asks the user first", on_table(json!({
            "columnId": {"type": "string", "minLength": 1, "description": "ID of the column (from schema)"},
            "currentColumnName": {"type": "string", "description": COLUMN_NAME_DOC}
        })), &["dataTableId", "columnId"]),
        action("rename-column", "Rename a column (its type stays). Asks the user first", on_table(json!({
            "columnId": {"type": "string", "minLength": 1, "description": "ID of the column (from schema)"},
            "currentColumnName": {"type": "string", "description": COLUMN_NAME_DOC},
            "newName": {"type": "string", "minLength": 1, "maxLength": 63, "description": "New column name: starts with a letter; letters, digits and underscores"}
        })), &["dataTableId", "columnId", "newName"]),
        action("insert-rows", "Insert rows (1–100 per call; split larger loads into several calls). All or nothing: a bad value fails the call and nothing is written. Asks the user first", on_table(json!({
            "rows": {"type": "array", "minItems": 1, "maxItems": MAX_INSERT_ROWS, "description": "Row objects: column name → value (string, number, boolean or null)", "items": {"type": "object"}}
        })), &["dataTableId", "rows"]),
        action("update-rows", "Set column values on the rows matching a filter. Asks the user first", on_table(json!({
            "filter": filter_schema(1),
            "data": {"type": "object", "description": "Column name → new value for every matching row"}
        })), &["dataTableId", "filter", "data"]),
        action("delete-rows", "Delete the rows matching a filter (at least one condition). Asks the user first", on_table(json!({
            "filter": filter_schema(1)
        })), &["dataTableId", "filter"]),
    ]})
}

/// How a call names its table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TableArg {
    data_table_id: String,
    data_table_name: Option<String>,
    project_id: Option<String>,
}

impl TableArg {
    fn reference(&self) -> TableRef<'_> {
        TableRef::new(&self.data_table_id, self.project_id.as_deref())
    }

    /// The card's title names the table: the name the model passed, else the one found.
    fn card_name(&self, found: &DataTable) -> String {
        self.data_table_name.clone().unwrap_or_else(|| found.name.clone())
    }
}

/// One call, as the schema's discriminated union.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", rename_all_fields = "camelCase")]
enum Call {
    List {
        project_id: Option<String>,
    },
    Schema {
        #[serde(flatten)]
        table: TableArg,
    },
    Query {
        #[serde(flatten)]
        table: TableArg,
        filter: Option<Filter>,
        limit: Option<usize>,
        offset: Option<usize>,
        full_cell_values: Option<bool>,
    },
    Create {
        name: String,
        project_id: Option<String>,
        columns: Vec<NewColumn>,
    },
    Delete {
        #[serde(flatten)]
        table: TableArg,
    },
    AddColumn {
        #[serde(flatten)]
        table: TableArg,
        column_name: String,
        #[serde(rename = "type")]
        kind: ColumnType,
    },
    DeleteColumn {
        #[serde(flatten)]
        table: TableArg,
        column_id: String,
        current_column_name: Option<String>,
    },
    RenameColumn {
        #[serde(flatten)]
        table: TableArg,
        column_id: String,
        current_column_name: Option<String>,
        new_name: String,
    },
    InsertRows {
        #[serde(flatten)]
        table: TableArg,
        rows: Vec<Map<String, Value>>,
    },
    UpdateRows {
        #[serde(flatten)]
        table: TableArg,
        filter: Filter,
        data: Map<String, Value>,
    },
    DeleteRows {
        #[serde(flatten)]
        table: TableArg,
        filter: Filter,
    },
}

fn parse(args: &Value) -> Result<Call, String> {
    serde_json::from_value(args.clone()).map_err(|e| format!("Invalid input for {NAME}: {e}"))
}

fn type_name(t: ColumnType) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

fn columns_json(t: &DataTable) -> Vec<Value> {
    t.columns.iter().map(|c| json!({"id": c.id, "name": c.name, "type": type_name(c.kind), "index": c.index})).collect()
}

fn table_json(t: &DataTable) -> Value {
    json!({"id": t.id, "name": t.name, "projectId": t.project_id, "columns": columns_json(t), "createdAt": t.created_at, "updatedAt": t.updated_at})
}

/// Where a change landed.
fn target(t: &DataTable) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("dataTableId".into(), json!(t.id));
    m.insert("tableName".into(), json!(t.name));
    m.insert("projectId".into(), json!(t.project_id));
    m
}

fn with(mut base: Map<String, Value>, extra: Value) -> Value {
    if let Value::Object(e) = extra {
        base.extend(e);
    }
    Value::Object(base)
}

/// Cuts string cells past [`MAX_CELL_CHARS`]; returns the columns it cut.
fn cut_cells(rows: &mut [Map<String, Value>]) -> Vec<String> {
    let mut cut: Vec<String> = Vec::new();
    for row in rows {
        for (col, v) in row.iter_mut() {
            let Value::String(s) = v else { continue };
            let len = s.chars().count();
            if len > MAX_CELL_CHARS {
                let head: String = s.chars().take(MAX_CELL_CHARS).collect();
                *v = Value::String(format!("{head}… [truncated, {len} chars total]"));
                if !cut.contains(col) {
                    cut.push(col.clone());
                }
            }
        }
    }
    cut
}

impl DataTables {
    async fn act(&self, ctx: &ToolContext<'_>, call: Call) -> Result<Value, InstanceError> {
        let inst = ctx.instance().map_err(InstanceError::Internal)?;
        let caller = ctx.caller();
        match call {
            Call::List { project_id } => {
                let page = inst.list_data_tables(&caller, project_id.as_deref()).await?;
                let mut out = json!({"tables": page.data.iter().map(table_json).collect::<Vec<_>>()});
                if page.count > page.data.len() {
                    out["total"] = json!(page.count);
                    out["hint"] = json!(format!("Showing {} of {} tables, by name.", page.data.len(), page.count));
                }
                Ok(out)
            }
            Call::Schema { table } => {
                let t = inst.data_table(&caller, table.reference(), "dataTable:read").await?;
                Ok(json!({"dataTableId": t.id, "dataTableName": t.name, "projectId": t.project_id, "columns": columns_json(&t)}))
            }
            Call::Query { table, filter, limit, offset, full_cell_values } => {
                let filtered = filter.as_ref().is_some_and(|f| !f.conditions.is_empty());
                let full = full_cell_values == Some(true) && filtered;
                let limit = if full { limit.unwrap_or(1).min(MAX_FULL_VALUE_ROWS) } else { limit.unwrap_or(DEFAULT_QUERY_LIMIT).min(MAX_QUERY_LIMIT) };
                let offset = offset.unwrap_or(0);
                let q = RowQuery { filter, limit: Some(limit), offset, ..RowQuery::default() };
                let (t, mut page) = inst.query_data_table_rows(&caller, table.reference(), &q).await?;
                let mut hints = Vec::new();
                if !full {
                    let cut = cut_cells(&mut page.data);
                    if !cut.is_empty() {
                        hints.push(if full_cell_values == Some(true) {
                            format!("fullCellValues was ignored because the query has no filter. Values in column(s) {} were cut to {MAX_CELL_CHARS} characters; query again with a filter matching only the rows you need.", cut.join(", "))
                        } else {
                            format!("Values in column(s) {} were cut to {MAX_CELL_CHARS} characters. For a full value, query again with fullCellValues: true and a filter matching only that row.", cut.join(", "))
                        });
                    }
                }
                let remaining = page.count.saturating_sub(offset + page.data.len());
                if remaining > 0 {
                    hints.push(format!("{remaining} more matching rows; page with offset {}.", offset + page.data.len()));
                }
                let mut out = json!({
                    "dataTableId": t.id,
                    "dataTableName": t.name,
                    "projectId": t.project_id,
                    "count": page.count,
                    "returned": page.data.len(),
                    "data": json_envelope(&format!("data-table:{}", t.id), &Value::Array(page.data.into_iter().map(Value::Object).collect())),
                });
                if !hints.is_empty() {
                    out["hint"] = json!(hints.join(" "));
                }
                Ok(out)
            }
            Call::Create { name, project_id, columns } => {
                match inst.create_data_table(&caller, project_id.as_deref(), &name, &columns).await {
                    Ok(t) => Ok(json!({"table": table_json(&t)})),
                    // Guide the model to the table that exists instead of retrying.
                    Err(InstanceError::Conflict(_)) => Err(InstanceError::Conflict(format!(
                        "A data table named {name:?} already exists in that project. Use data-tables(action=\"list\") to find it and data-tables(action=\"schema\") to check its columns."
                    ))),
                    Err(e) => Err(e),
                }
            }
            Call::Delete { table } => {
                let t = inst.delete_data_table(&caller, table.reference()).await?;
                Ok(with(target(&t), json!({"success": true})))
            }
            Call::AddColumn { table, column_name, kind } => {
                let (t, c) = inst.add_data_table_column(&caller, table.reference(), &NewColumn { name: column_name, kind }).await?;
                Ok(with(target(&t), json!({"column": {"id": c.id, "name": c.name, "type": type_name(c.kind), "index": c.index}})))
            }
            Call::DeleteColumn { table, column_id, .. } => {
                let (t, c) = inst.delete_data_table_column(&caller, table.reference(), &column_id).await?;
                Ok(with(target(&t), json!({"success": true, "deletedColumn": c.name})))
            }
            Call::RenameColumn { table, column_id, new_name, .. } => {
                let (t, c) = inst.rename_data_table_column(&caller, table.reference(), &column_id, &new_name).await?;
                Ok(with(target(&t), json!({"success": true, "column": {"id": c.id, "name": c.name, "type": type_name(c.kind)}})))
            }
            Call::InsertRows { table, rows } => {
                if rows.len() > MAX_INSERT_ROWS {
                    return Err(InstanceError::Invalid(format!("insert at most {MAX_INSERT_ROWS} rows per call, got {}; split them into several calls", rows.len())));
                }
                let (t, inserted) = inst.insert_data_table_rows(&caller, table.reference(), &rows).await?;
                Ok(with(target(&t), json!({"insertedCount": inserted.len()})))
            }
            Call::UpdateRows { table, filter, data } => {
                let (t, updated) = inst.update_data_table_rows(&caller, table.reference(), &filter, &data).await?;
                Ok(with(target(&t), json!({"updatedCount": updated.len()})))
            }
            Call::DeleteRows { table, filter } => {
                let (t, deleted) = inst.delete_data_table_rows(&caller, table.reference(), &filter).await?;
                Ok(with(target(&t), json!({"success": true, "deletedCount": deleted.len()})))
            }
        }
    }

    /// The card of a change, after checking the caller may make it.
    async fn card(&self, ctx: &ToolContext<'_>, call: &Call) -> Result<Option<(Severity, String, String, Value)>, InstanceError> {
        let inst = ctx.instance().map_err(InstanceError::Internal)?;
        let caller = ctx.caller();
        let on = |table: &TableArg, scope: &'static str| {
            let caller = caller.clone();
            let table = table.clone();
            async move {
                let t = inst.data_table(&caller, table.reference(), scope).await?;
                Ok::<String, InstanceError>(table.card_name(&t))
            }
        };
        Ok(Some(match call {
            Call::List { .. } | Call::Schema { .. } | Call::Query { .. } => return Ok(None),
            Call::Create { name, project_id, columns } => {
                let project = inst.target_project(&caller, project_id.as_deref(), "dataTable:create").await?;
                let cols: Vec<String> = columns.iter().map(|c| format!("\"{}\"", c.name)).collect();
                let mut message = format!(
                    "Create the table with {} {}: {}",
                    columns.len(),
                    if columns.len() == 1 { "column" } else { "columns" },
                    cols.join(", ")
                );
                if project_id.is_some() {
                    let label = inst.data.projects.project(&project).await?.map(|p| p.name).unwrap_or(project.clone());
                    message.push_str(&format!(" in project \"{label}\""));
                }
                let details = json!({"action": "create-table", "columns": columns.iter().map(|c| json!({"name": c.name, "type": type_name(c.kind)})).collect::<Vec<_>>()});
                (Severity::Info, name.clone(), message, details)
            }
            Call::Delete { table } => {
                let name = on(table, "dataTable:delete").await?;
                (Severity::Destructive, name, "Permanently delete the table and all its rows".into(), json!({"action": "delete-table"}))
            }
            Call::AddColumn { table, column_name, kind } => {
                let name = on(table, "dataTable:update").await?;
                let kind = type_name(*kind);
                let message = format!("Add column \"{column_name}\" ({})", kind.as_str().unwrap_or_default());
                (Severity::Warning, name, message, json!({"action": "add-column", "column": column_name, "columnType": kind}))
            }
            Call::DeleteColumn { table, column_id, current_column_name } => {
                let t = inst.data_table(&caller, table.reference(), "dataTable:update").await?;
                let column = column_label(&t, column_id, current_column_name.as_deref())?;
                let message = format!("Delete column \"{column}\" and its values");
                (Severity::Destructive, table.card_name(&t), message, json!({"action": "delete-column", "column": column}))
            }
            Call::RenameColumn { table, column_id, current_column_name, new_name } => {
                let t = inst.data_table(&caller, table.reference(), "dataTable:update").await?;
                let column = column_label(&t, column_id, current_column_name.as_deref())?;
                let message = format!("Rename column \"{column}\" to \"{new_name}\"");
                (Severity::Warning, table.card_name(&t), message, json!({"action": "rename-column", "column": column, "newName": new_name}))
            }
            Call::InsertRows { table, rows } => {
                let name = on(table, "dataTable:writeRow").await?;
                let (message, details) = card::insert_rows(rows);
                (Severity::Warning, name, message, details)
            }
            Call::UpdateRows { table, filter, data } => {
                let name = on(table, "dataTable:writeRow").await?;
                let (message, details) = card::update_rows(filter, data);
                (Severity::Warning, name, message, details)
            }
            Call::DeleteRows { table, filter } => {
                let name = on(table, "dataTable:writeRow").await?;
                let (message, details) = card::delete_rows(filter);
                (Severity::Destructive, name, message, details)
            }
        }))
    }
}

/// The column as the card names it: the name the model passed, else its
/// current name; a column the table does not have is refused before asking.
fn column_label(t: &DataTable, column_id: &str, given: Option<&str>) -> Result<String, InstanceError> {
    let c = t
        .columns
        .iter()
        .find(|c| c.id == column_id)
        .ok_or_else(|| InstanceError::NotFound(format!("column {column_id} in data table {:?} (see its schema for column ids)", t.name)))?;
    Ok(given.map(str::to_owned).unwrap_or_else(|| c.name.clone()))
}

fn action_of(args: &Value) -> &str {
    args.get("action").and_then(Value::as_str).unwrap_or("*")
}

impl Tool for DataTables {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema()
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            let call = parse(args)?;
            let Some((severity, resource, message, details)) = self.card(ctx, &call).await.map_err(|e| e.message())? else {
                return Ok(None);
            };
            let mut request = ConfirmationRequest::approval("", "", NAME, Map::new(), severity, message);
            request.resource_name = Some(resource);
            request.approval_details = Some(details);
            Ok(Some(Gate::permission(request, format!("{NAME}.{}", action_of(args)))))
        })
    }

    /// Scoped by the table (and the column a column change names; create by
    /// its project): "always allow" on deleting rows of one table never
    /// covers another table, while the batches of one load into a table
    /// share one grant.
    fn allow_key(&self, args: &Value) -> Option<String> {
        let fields: &[&str] = match action_of(args) {
            "create" => &["projectId"],
            "delete-column" | "rename-column" => &["dataTableId", "columnId", "projectId"],
            _ => &["dataTableId", "projectId"],
        };
        super::resource_grant(NAME, args, fields)
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let call = match parse(&args) {
                Ok(c) => c,
                Err(e) => return ToolOutcome::Failed(e),
            };
            match self.act(ctx, call).await {
                Ok(v) => ToolOutcome::Done(v),
                Err(e) => ToolOutcome::Failed(e.message()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::policy::ACTIONS;
    use crate::tools::schema::validate;

    #[test]
    fn the_schema_is_a_union_of_eleven_described_actions() {
        let schema = schema();
        let variants = schema["oneOf"].as_array().unwrap();
        let names: Vec<&str> = variants.iter().map(|v| v["properties"]["action"]["const"].as_str().unwrap()).collect();
        assert_eq!(names, ["list", "schema", "query", "create", "delete", "add-column", "delete-column", "rename-column", "insert-rows", "update-rows", "delete-rows"]);
        for v in variants {
            for (field, p) in v["properties"].as_object().unwrap() {
                assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()), "{field} of {} has no description", v["properties"]["action"]["const"]);
            }
        }
        for gated in &names[3..] {
            assert!(ACTIONS.contains(&format!("{NAME}.{gated}").as_str()), "{gated} has a policy action");
        }
        let rows: Vec<Value> = (0..101).map(|i| json!({"n": i})).collect();
        assert!(validate(&schema, &json!({"action": "insert-rows", "dataTableId": "t", "rows": rows})).unwrap_err().contains("at most 100"));
        assert!(validate(&schema, &json!({"action": "delete-rows", "dataTableId": "t", "filter": {"type": "and", "filters": []}})).unwrap_err().contains("at least 1"));
        assert!(validate(&schema, &json!({"action": "query", "dataTableId": "t", "filter": {"filters": [{"columnName": "a", "condition": "contains", "value": "x"}]}})).is_err());
        assert!(validate(&schema, &json!({"action": "query", "dataTableId": "t", "filter": {"filters": [{"columnName": "a", "condition": "isEmpty"}]}})).is_ok());
        assert!(validate(&schema, &json!({"action": "create", "name": "t", "columns": [{"name": "a", "type": "text"}]})).is_err());
    }

    #[test]
    fn calls_parse_into_the_union() {
        let c = parse(&json!({"action": "rename-column", "dataTableId": "t1", "dataTableName": "Leads", "columnId": "2", "newName": "mail"})).unwrap();
        match c {
            Call::RenameColumn { table, column_id, new_name, current_column_name } => {
                assert_eq!((table.data_table_id.as_str(), table.data_table_name.as_deref()), ("t1", Some("Leads")));
                assert_eq!((column_id.as_str(), new_name.as_str(), current_column_name), ("2", "mail", None));
            }
            other => panic!("{other:?}"),
        }
        let q = parse(&json!({"action": "query", "dataTableId": "t", "filter": {"type": "or", "filters": [{"columnName": "email", "condition": "ilike", "value": "ACME"}]}})).unwrap();
        let Call::Query { filter: Some(f), .. } = q else { panic!("query") };
        assert_eq!(f.conditions[0].condition, store::data::data_tables::Op::Ilike);
        assert!(parse(&json!({"action": "nope"})).is_err());
    }

    #[test]
    fn grants_are_scoped_by_the_table_and_column() {
        let t = DataTables;
        let key = |v: Value| t.allow_key(&v).unwrap();
        let rows = |table: &str, n: i64| json!({"action": "insert-rows", "dataTableId": table, "rows": [{"n": n}]});
        assert_eq!(key(rows("t1", 1)), "data-tables:insert-rows:t1");
        assert!(t.covering_keys(&rows("t1", 2)).contains(&key(rows("t1", 1))), "the next batch into the same table is covered");
        assert!(!t.covering_keys(&rows("t2", 1)).contains(&key(rows("t1", 1))), "another table is not");
        let del = |table: &str| json!({"action": "delete-rows", "dataTableId": table, "dataTableName": "Leads", "filter": {"filters": [{"columnName": "a", "condition": "isEmpty"}]}});
        assert_ne!(key(del("t1")), key(del("t2")));
        assert_ne!(key(json!({"action": "delete", "dataTableId": "t1"})), key(json!({"action": "delete", "dataTableId": "t2"})));
        let col = |c: &str| json!({"action": "delete-column", "dataTableId": "t1", "columnId": c});
        assert_eq!(key(col("c1")), "data-tables:delete-column:t1:c1");
        assert_ne!(key(col("c1")), key(col("c2")), "deleting one column does not cover another");
        // A table given by name is another table in another project.
        assert_ne!(key(json!({"action": "delete", "dataTableId": "Leads", "projectId": "p1"})), key(json!({"action": "delete", "dataTableId": "Leads", "projectId": "p2"})));
        assert_eq!(key(json!({"action": "create", "name": "a", "columns": []})), "data-tables:create");
        assert_ne!(key(json!({"action": "create", "name": "a", "projectId": "p1"})), key(json!({"action": "create", "name": "a", "projectId": "p2"})));
    }

    #[test]
    fn long_cells_are_cut_and_named() {
        let mut rows = vec![json!({"a": "x".repeat(2000), "b": "short"}).as_object().cloned().unwrap()];
        assert_eq!(cut_cells(&mut rows), ["a"]);
        let a = rows[0]["a"].as_str().unwrap();
        assert!(a.ends_with("… [truncated, 2000 chars total]") && a.starts_with(&"x".repeat(MAX_CELL_CHARS)));
        assert_eq!(rows[0]["b"], "short");
    }
}
