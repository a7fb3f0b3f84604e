//! Data tables: every operation on tables, columns and rows, one home each
//! (the agent's `data-tables` tool and the MCP data-table tools call these).
//!
//! A table is named by a [`TableRef`]: its id, or — because a model
//! sometimes passes the name it saw in a listing — its exact name, looked up
//! in the projects the caller belongs to. `project_id` narrows the name
//! lookup and, with an id, must be the table's project. Access follows the
//! project role: a table in a project the caller is not a member of is "not
//! found"; a member lacking the scope is refused with the scope named.
//!
//! Scopes: `dataTable:read` (list, schema), `dataTable:readRow` (query),
//! `dataTable:writeRow` (insert, update, delete rows), `dataTable:update`
//! (rename, columns), `dataTable:create`, `dataTable:delete`.

use crate::access::Caller;
use crate::{Instance, InstanceError};
use serde_json::{Map, Value};
use store::data::data_tables::{Column, DataTable, DataTablePage, Filter, NewColumn, Row, RowPage, RowQuery};

/// How a front door names a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRef<'a> {
    /// The table's id, or its exact name.
    pub table: &'a str,
    /// The project it belongs to, when the caller knows it.
    pub project_id: Option<&'a str>,
}

impl<'a> TableRef<'a> {
    pub fn new(table: &'a str, project_id: Option<&'a str>) -> Self {
        TableRef { table, project_id }
    }
}

/// The most tables one listing returns.
pub const MAX_LISTED_TABLES: usize = 100;

impl Instance {
    /// Resolves a table the caller may act on with `scope`.
    pub async fn data_table(&self, caller: &Caller, r: TableRef<'_>, scope: &str) -> Result<DataTable, InstanceError> {
        self.user(caller).await?;
        let not_found = || match r.project_id {
            Some(p) => InstanceError::NotFound(format!("data table {:?} in project {p}", r.table)),
            None => InstanceError::NotFound(format!("data table {:?}", r.table)),
        };
        let projects = &self.data.projects;
        let table = match self.data.data_tables.get(r.table).await? {
            Some(t) => t,
            None => {
                // A name: at most one table per project carries it.
                let mut hits = Vec::new();
                for p in projects.projects_of(&caller.user).await? {
                    if r.project_id.is_some_and(|want| want != p.project.id) {
                        continue;
                    }
                    if let Some(t) = self.data.data_tables.by_name(&p.project.id, r.table).await? {
                        hits.push(t);
                    }
                }
                match hits.len() {
                    0 => return Err(not_found()),
                    1 => hits.remove(0),
                    _ => {
                        let ids: Vec<String> = hits.iter().map(|t| format!("{} (project {})", t.id, t.project_id)).collect();
                        return Err(InstanceError::Invalid(format!(
                            "more than one data table is named {:?}: {}; pass the id, or the projectId to choose",
                            r.table,
                            ids.join(", ")
                        )));
                    }
                }
            }
        };
        if r.project_id.is_some_and(|p| p != table.project_id) {
            return Err(not_found());
        }
        match projects.role(&caller.user, &table.project_id).await? {
            None => Err(not_found()),
            Some(role) if role.can(scope) => Ok(table),
            Some(_) => Err(InstanceError::Forbidden(format!(
                "you lack the permission {scope} on data table {:?}",
                table.name
            ))),
        }
    }

    /// The tables of one project (the named one, else the caller's write
    /// project), by name, at most [`MAX_LISTED_TABLES`]; `count` is all of them.
    pub async fn list_data_tables(&self, caller: &Caller, project_id: Option<&str>) -> Result<DataTablePage, InstanceError> {
        let project = self.target_project(caller, project_id, "dataTable:read").await?;
        Ok(self.data.data_tables.search(&[project], None, Some(MAX_LISTED_TABLES)).await?)
    }

    /// Tables across every project the caller can read (optionally one),
    /// by case-insensitive name substring.
    pub async fn search_data_tables(
        &self,
        caller: &Caller,
        query: Option<&str>,
        project_id: Option<&str>,
        limit: usize,
    ) -> Result<DataTablePage, InstanceError> {
        self.user(caller).await?;
        let projects: Vec<String> = self
            .data
            .projects
            .projects_of(&caller.user)
            .await?
            .into_iter()
            .filter(|p| p.role.can("dataTable:read"))
            .map(|p| p.project.id)
            .filter(|p| project_id.is_none_or(|want| want == p))
            .collect();
        Ok(self.data.data_tables.search(&projects, query, Some(limit)).await?)
    }

    /// Creates a table in the named project, else the caller's write project.
    pub async fn create_data_table(
        &self,
        caller: &Caller,
        project_id: Option<&str>,
        name: &str,
        columns: &[NewColumn],
    ) -> Result<DataTable, InstanceError> {
        let project = self.target_project(caller, project_id, "dataTable:create").await?;
        Ok(self.data.data_tables.create(&project, name, columns).await?)
    }

    /// Deletes the table and all its rows; returns what it was.
    pub async fn delete_data_table(&self, caller: &Caller, r: TableRef<'_>) -> Result<DataTable, InstanceError> {
        let table = self.data_table(caller, r, "dataTable:delete").await?;
        self.data.data_tables.delete(&table.id).await?;
        Ok(table)
    }

    /// Renames the table; returns it before and after.
    pub async fn rename_data_table(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        name: &str,
    ) -> Result<(DataTable, DataTable), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:update").await?;
        let renamed = self.data.data_tables.rename(&table.id, name).await?;
        Ok((table, renamed))
    }

    pub async fn add_data_table_column(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        column: &NewColumn,
    ) -> Result<(DataTable, Column), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:update").await?;
        let c = self.data.data_tables.add_column(&table.id, column).await?;
        Ok((table, c))
    }

    /// Renames a column (its type stays); returns the table and the column as renamed.
    pub async fn rename_data_table_column(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        column_id: &str,
        name: &str,
    ) -> Result<(DataTable, Column), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:update").await?;
        let c = self.data.data_tables.rename_column(&table.id, column_id, name).await?;
        Ok((table, c))
    }

    /// Deletes a column and its values; returns the table and the column deleted.
    pub async fn delete_data_table_column(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        column_id: &str,
    ) -> Result<(DataTable, Column), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:update").await?;
        let c = self.data.data_tables.delete_column(&table.id, column_id).await?;
        Ok((table, c))
    }

    /// Rows matching the query's filter, sorted and paged.
    pub async fn query_data_table_rows(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        q: &RowQuery,
    ) -> Result<(DataTable, RowPage), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:readRow").await?;
        let page = self.data.data_tables.query(&table.id, q).await?;
        Ok((table, page))
    }

    /// Inserts 1–1000 rows, all or nothing on validation (see the store).
    pub async fn insert_data_table_rows(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        rows: &[Map<String, Value>],
    ) -> Result<(DataTable, Vec<Row>), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:writeRow").await?;
        let inserted = self.data.data_tables.insert_rows(&table.id, rows).await?;
        Ok((table, inserted))
    }

    /// Sets `values` on the rows matching a non-empty filter; returns them.
    pub async fn update_data_table_rows(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        filter: &Filter,
        values: &Map<String, Value>,
    ) -> Result<(DataTable, Vec<Row>), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:writeRow").await?;
        let updated = self.data.data_tables.update_rows(&table.id, filter, values).await?;
        Ok((table, updated))
    }

    /// Deletes the rows matching a non-empty filter; returns them.
    pub async fn delete_data_table_rows(
        &self,
        caller: &Caller,
        r: TableRef<'_>,
        filter: &Filter,
    ) -> Result<(DataTable, Vec<Row>), InstanceError> {
        let table = self.data_table(caller, r, "dataTable:writeRow").await?;
        let deleted = self.data.data_tables.delete_rows(&table.id, filter).await?;
        Ok((table, deleted))
    }
}
