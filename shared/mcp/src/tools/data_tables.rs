//! Data-table tools: search, create, columns, rename, rows.

use super::{limit, Ctx};
use instance::data_tables::TableRef;
use crate::error::McpError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use store::data::data_tables::{ColumnType, NewColumn, MAX_ROWS_PER_INSERT};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchDataTablesArgs {
    /// Filter data tables by name (case-insensitive partial match)
    pub query: Option<String>,
    /// Filter by project ID
    pub project_id: Option<String>,
    /// Limit the number of results (max 100)
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
pub struct ColumnRow {
    pub id: String,
    pub name: String,
    /// string, number, boolean or date
    #[serde(rename = "type")]
    pub kind: String,
    pub index: u32,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataTableRow {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub columns: Vec<ColumnRow>,
}

#[derive(Serialize, JsonSchema)]
pub struct SearchDataTablesOut {
    pub data: Vec<DataTableRow>,
    pub count: u64,
}

fn type_str(t: ColumnType) -> String {
    serde_json::to_value(t).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub async fn search_data_tables(ctx: &Ctx<'_>, a: SearchDataTablesArgs) -> Result<SearchDataTablesOut, McpError> {
    let page = ctx
        .instance()
        .search_data_tables(&ctx.caller(), a.query.as_deref(), a.project_id.as_deref(), limit(a.limit, 100, 100)?)
        .await?;
    Ok(SearchDataTablesOut {
        count: page.count as u64,
        data: page
            .data
            .into_iter()
            .map(|t| DataTableRow {
                columns: t
                    .columns
                    .into_iter()
                    .map(|c| ColumnRow { id: c.id, name: c.name, kind: type_str(c.kind), index: c.index as u32 })
                    .collect(),
                id: t.id,
                name: t.name,
                project_id: t.project_id,
                created_at: t.created_at,
                updated_at: t.updated_at,
            })
            .collect(),
    })
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum ColumnTypeArg {
    String,
    Number,
    Boolean,
    Date,
}

impl From<ColumnTypeArg> for ColumnType {
    fn from(t: ColumnTypeArg) -> Self {
        match t {
            ColumnTypeArg::String => ColumnType::String,
            ColumnTypeArg::Number => ColumnType::Number,
            ColumnTypeArg::Boolean => ColumnType::Boolean,
            ColumnTypeArg::Date => ColumnType::Date,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ColumnArg {
    /// Column name: starts with a letter; letters, digits and underscores (max 63 chars)
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-zA-Z][a-zA-Z0-9_]*$"))]
    pub name: String,
    /// The data type of the column
    #[serde(rename = "type")]
    pub kind: ColumnTypeArg,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateDataTableArgs {
    /// The project ID where the data table will be created
    pub project_id: String,
    /// The name of the data table (1-128 chars, unique within the project)
    #[schemars(length(min = 1, max = 128))]
    pub name: String,
    /// The columns to create (at least one)
    #[schemars(length(min = 1))]
    pub columns: Vec<ColumnArg>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateDataTableOut {
    pub id: String,
    pub name: String,
    pub project_id: String,
}

pub async fn create_data_table(ctx: &Ctx<'_>, a: CreateDataTableArgs) -> Result<CreateDataTableOut, McpError> {
    let cols: Vec<NewColumn> = a.columns.into_iter().map(|c| NewColumn { name: c.name, kind: c.kind.into() }).collect();
    let t = ctx.instance().create_data_table(&ctx.caller(), Some(&a.project_id), &a.name, &cols).await?;
    Ok(CreateDataTableOut { id: t.id, name: t.name, project_id: t.project_id })
}

/// The table of `project_id` these tools name.
fn table<'a>(id: &'a str, project_id: &'a str) -> TableRef<'a> {
    TableRef::new(id, Some(project_id))
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddColumnArgs {
    /// The ID of the data table to add a column to
    pub data_table_id: String,
    /// The project ID the data table belongs to
    pub project_id: String,
    /// Column name: starts with a letter; letters, digits and underscores (max 63 chars)
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-zA-Z][a-zA-Z0-9_]*$"))]
    pub name: String,
    /// The data type of the new column
    #[serde(rename = "type")]
    pub kind: ColumnTypeArg,
}

#[derive(Serialize, JsonSchema)]
pub struct ColumnInfo {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Serialize, JsonSchema)]
pub struct ColumnOut {
    pub success: bool,
    pub message: String,
    pub column: ColumnInfo,
}

pub async fn add_data_table_column(ctx: &Ctx<'_>, a: AddColumnArgs) -> Result<ColumnOut, McpError> {
    let column = NewColumn { name: a.name, kind: a.kind.into() };
    let (t, c) = ctx.instance().add_data_table_column(&ctx.caller(), table(&a.data_table_id, &a.project_id), &column).await?;
    Ok(ColumnOut {
        success: true,
        message: format!("Column {:?} added to data table {:?}", c.name, t.name),
        column: ColumnInfo { id: c.id, name: c.name, kind: type_str(c.kind) },
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameColumnArgs {
    /// The ID of the data table containing the column
    pub data_table_id: String,
    /// The project ID the data table belongs to
    pub project_id: String,
    /// The ID of the column to rename
    pub column_id: String,
    /// The new column name
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-zA-Z][a-zA-Z0-9_]*$"))]
    pub name: String,
}

pub async fn rename_data_table_column(ctx: &Ctx<'_>, a: RenameColumnArgs) -> Result<ColumnOut, McpError> {
    let (_, c) = ctx
        .instance()
        .rename_data_table_column(&ctx.caller(), table(&a.data_table_id, &a.project_id), &a.column_id, &a.name)
        .await?;
    Ok(ColumnOut {
        success: true,
        message: format!("Column {} renamed to {:?}", a.column_id, c.name),
        column: ColumnInfo { id: c.id, name: c.name, kind: type_str(c.kind) },
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteColumnArgs {
    /// The ID of the data table containing the column
    pub data_table_id: String,
    /// The project ID the data table belongs to
    pub project_id: String,
    /// The ID of the column to delete
    pub column_id: String,
}

#[derive(Serialize, JsonSchema)]
pub struct SuccessOut {
    pub success: bool,
    pub message: String,
}

pub async fn delete_data_table_column(ctx: &Ctx<'_>, a: DeleteColumnArgs) -> Result<SuccessOut, McpError> {
    let (t, c) =
        ctx.instance().delete_data_table_column(&ctx.caller(), table(&a.data_table_id, &a.project_id), &a.column_id).await?;
    Ok(SuccessOut { success: true, message: format!("Column {:?} deleted from data table {:?}", c.name, t.name) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameDataTableArgs {
    /// The ID of the data table to rename
    pub data_table_id: String,
    /// The project ID the data table belongs to
    pub project_id: String,
    /// The new name (1-128 chars)
    #[schemars(length(min = 1, max = 128))]
    pub name: String,
}

pub async fn rename_data_table(ctx: &Ctx<'_>, a: RenameDataTableArgs) -> Result<SuccessOut, McpError> {
    let (t, renamed) = ctx.instance().rename_data_table(&ctx.caller(), table(&a.data_table_id, &a.project_id), &a.name).await?;
    Ok(SuccessOut { success: true, message: format!("Data table {:?} renamed to {:?}", t.name, renamed.name) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddRowsArgs {
    /// The ID of the data table to insert rows into
    pub data_table_id: String,
    /// The project ID the data table belongs to
    pub project_id: String,
    /// Rows (1-1000): objects mapping column names to string, number, boolean or null
    #[schemars(length(min = 1, max = 1000))]
    pub rows: Vec<Map<String, Value>>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddRowsOut {
    pub success: bool,
    pub inserted_count: u64,
}

pub async fn add_data_table_rows(ctx: &Ctx<'_>, a: AddRowsArgs) -> Result<AddRowsOut, McpError> {
    if a.rows.is_empty() || a.rows.len() > MAX_ROWS_PER_INSERT {
        return Err(McpError::InvalidArguments(format!(
            "rows must hold 1-{MAX_ROWS_PER_INSERT} rows per call, got {}; split larger inserts into several calls",
            a.rows.len()
        )));
    }
    // Every row is validated before any is written, so a bad row changes nothing.
    let (_, inserted) = ctx.instance().insert_data_table_rows(&ctx.caller(), table(&a.data_table_id, &a.project_id), &a.rows).await?;
    Ok(AddRowsOut { success: true, inserted_count: inserted.len() as u64 })
}
