//! The MCP servers a user connected (Agent table): `pk=mcpconn#<user>`,
//! `sk=server#<slug>`, with the credential its requests carry (an id in the
//! credential store, never a secret) and the tools the server listed when
//! it was connected or last looked at (compressed JSON), so offering them
//! to the model costs no request to the server.

use super::db::{self, b, get_b, get_s, key, s, Table};
use crate::error::StoreError;
use protocol::UserId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool as the server described it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConnection {
    pub slug: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_id: Option<String>,
    pub connected_at: String,
    pub tools: Vec<McpToolSpec>,
}

#[derive(Clone, Debug)]
pub struct McpConnections {
    table: Table,
}

fn pk(user: &UserId) -> String {
    format!("mcpconn#{user}")
}

impl McpConnections {
    pub fn new(table: Table) -> Self {
        McpConnections { table }
    }

    /// Every server the user connected, by slug.
    pub async fn list(&self, user: &UserId) -> Result<Vec<McpConnection>, StoreError> {
        let items = self.table.query_prefix(&pk(user), "server#", false).await?;
        items
            .iter()
            .map(|item| {
                let packed = get_b(item, "tools").ok_or_else(|| StoreError::Corrupt("MCP connection without tools".into()))?;
                let tools: Vec<McpToolSpec> = serde_json::from_slice(&db::decompress(&packed)?).map_err(|e| StoreError::Corrupt(format!("MCP tools: {e}")))?;
                Ok(McpConnection {
                    slug: get_s(item, "slug").unwrap_or_default().to_owned(),
                    credential_id: get_s(item, "credentialId").map(str::to_owned),
                    connected_at: get_s(item, "connectedAt").unwrap_or_default().to_owned(),
                    tools,
                })
            })
            .collect()
    }

    /// Connects (or reconnects) a server; its tool list must fit one item.
    pub async fn put(&self, user: &UserId, c: &McpConnection) -> Result<(), StoreError> {
        let packed = db::compress(&serde_json::to_vec(&c.tools).map_err(|e| StoreError::Invalid(e.to_string()))?)?;
        if packed.len() > db::MAX_ITEM_PAYLOAD {
            return Err(StoreError::Invalid(format!("the MCP server {} lists too many tools to keep ({} bytes compressed)", c.slug, packed.len())));
        }
        let mut item = key(pk(user), format!("server#{}", c.slug));
        item.insert("slug".into(), s(&c.slug));
        item.insert("connectedAt".into(), s(&c.connected_at));
        item.insert("tools".into(), b(packed));
        if let Some(id) = &c.credential_id {
            item.insert("credentialId".into(), s(id));
        }
        self.table.put(item).await
    }

    pub async fn delete(&self, user: &UserId, slug: &str) -> Result<(), StoreError> {
        self.table.count();
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(user), format!("server#{slug}"))))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }
}
