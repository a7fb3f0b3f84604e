//! Files attached to chat messages (Agent table), kept with the run whose
//! message carried them: `pk=att#<thread>`, `sk=<run>#files` lists them
//! (name, MIME type, size), and each file's bytes, DEFLATE-compressed, are
//! cut into parts below the item limit: `sk=<run>#<index:02>#<part:04>`.
//! Written once, before the run's first step; read by `parse-file`.

use super::db::{self, b, get_b, get_s, key, put_req, s, Item, Table, MAX_ITEM_PAYLOAD};
use crate::error::StoreError;
use protocol::attachments::{AttachmentInfo, DecodedAttachment};
use protocol::ids::{RunId, ThreadId};

#[derive(Clone, Debug)]
pub struct Attachments {
    table: Table,
}

fn pk(thread: &ThreadId) -> String {
    format!("att#{thread}")
}

fn part_prefix(run: &RunId, index: usize) -> String {
    format!("{run}#{index:02}#")
}

impl Attachments {
    pub fn new(table: Table) -> Self {
        Attachments { table }
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Stores a message's attachments (nothing for none).
    pub async fn save(&self, thread: &ThreadId, run: &RunId, files: &[DecodedAttachment]) -> Result<(), StoreError> {
        if files.is_empty() {
            return Ok(());
        }
        let infos: Vec<&AttachmentInfo> = files.iter().map(|f| &f.info).collect();
        let mut list = key(pk(thread), format!("{run}#files"));
        list.insert("files".into(), s(serde_json::to_string(&infos).map_err(|e| StoreError::Invalid(e.to_string()))?));
        let mut requests = vec![put_req(list)?];
        for (i, f) in files.iter().enumerate() {
            let packed = db::compress(&f.bytes)?;
            let chunks: Vec<&[u8]> = if packed.is_empty() { vec![&[][..]] } else { packed.chunks(MAX_ITEM_PAYLOAD).collect() };
            for (n, c) in chunks.into_iter().enumerate() {
                let mut item = key(pk(thread), format!("{}{n:04}", part_prefix(run, i)));
                item.insert("part".into(), b(c.to_vec()));
                requests.push(put_req(item)?);
            }
        }
        self.table.batch_write(requests).await
    }

    /// The attachments of a run's message, in order (empty: none).
    pub async fn list(&self, thread: &ThreadId, run: &RunId) -> Result<Vec<AttachmentInfo>, StoreError> {
        let Some(item) = self.table.get_raw(&pk(thread), &format!("{run}#files")).await? else { return Ok(Vec::new()) };
        let json = get_s(&item, "files").ok_or_else(|| StoreError::Corrupt("attachment list without files".into()))?;
        serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("attachment list: {e}")))
    }

    /// One attachment's bytes (`None`: no such attachment).
    pub async fn bytes(&self, thread: &ThreadId, run: &RunId, index: usize) -> Result<Option<Vec<u8>>, StoreError> {
        let parts: Vec<Item> = self.table.query_prefix(&pk(thread), &part_prefix(run, index), false).await?;
        if parts.is_empty() {
            return Ok(None);
        }
        let mut packed = Vec::new();
        for p in &parts {
            packed.extend(get_b(p, "part").ok_or_else(|| StoreError::Corrupt("attachment part without bytes".into()))?);
        }
        db::decompress(&packed).map(Some)
    }
}
