//! Publishing makes a workflow live; this is the one home of publish,
//! unpublish and archive (MCP tools, agent tools and any REST route call it).
//!
//! Publish: (1) read the version and derive its endpoints and schedules
//! (an invalid path or rule is refused, nothing changed); (2) claim each
//! endpoint (a path another live workflow holds is a conflict: what this
//! call claimed is released and nothing is published); (3) move the
//! workflow's active version; (4) create or replace its schedules and
//! delete the ones it no longer has; (5) release the endpoints of the
//! previous version it no longer has; (6) record what it holds.
//! A crash in between leaves at worst claims of a version that is not
//! live: lookups check the live version, and a later claim takes a stale
//! claim over.

use crate::error::{Result, TriggerError};
use crate::schedules::{self, Schedules};
use store::data::webhooks::{endpoints, Holder, Registration, Scope, TriggerRecord};
use store::data::InstanceData;

#[derive(Clone, Debug)]
pub struct Activation {
    data: InstanceData,
    schedules: Option<Schedules>,
}

impl Activation {
    pub fn new(data: InstanceData, schedules: Option<Schedules>) -> Self {
        Activation { data, schedules }
    }

    /// Publishes `version_id` (default: the current draft); returns the
    /// active version id.
    pub async fn publish(&self, workflow_id: &str, version_id: Option<&str>) -> Result<String> {
        let wfs = &self.data.workflows;
        let meta = wfs.meta(workflow_id).await?.ok_or_else(|| TriggerError::NotFound(format!("workflow {workflow_id}")))?;
        if meta.is_archived {
            return Err(TriggerError::Invalid(format!("workflow {workflow_id} is archived")));
        }
        let target = version_id.unwrap_or(&meta.version_id).to_owned();
        let version = wfs
            .get_version(workflow_id, &target)
            .await?
            .ok_or_else(|| TriggerError::NotFound(format!("version {target} of workflow {workflow_id}")))?;
        let wanted: Vec<Registration> = endpoints(&version.body.nodes)
            .map_err(TriggerError::Invalid)?
            .into_iter()
            .map(|endpoint| Registration { endpoint, workflow_id: workflow_id.to_owned(), version_id: target.clone() })
            .collect();
        let planned = schedules::plan(workflow_id, &target, &version.body.nodes, &version.body.settings)?;
        if !planned.is_empty() && self.schedules.is_none() {
            return Err(TriggerError::NotSupported(
                "this deployment has no scheduler configured (SCHEDULER_GROUP), so a Schedule Trigger cannot be published".into(),
            ));
        }
        let old = self.data.webhooks.record(workflow_id, Scope::Production).await?;
        let held_before = |r: &Registration| old.endpoints.iter().any(|o| o.endpoint == r.endpoint);

        let mut claimed = Vec::new();
        for r in &wanted {
            if let Err(holder) = self.claim(r).await? {
                let fresh: Vec<Registration> = claimed.into_iter().filter(|c| !held_before(c)).collect();
                self.data.webhooks.release(&fresh).await?;
                return Err(self.conflict(r, &holder).await);
            }
            claimed.push(r.clone());
        }
        let active = match wfs.publish(workflow_id, version_id).await {
            Ok(v) => v,
            Err(e) => {
                let fresh: Vec<Registration> = claimed.into_iter().filter(|c| !held_before(c)).collect();
                self.data.webhooks.release(&fresh).await?;
                return Err(e.into());
            }
        };
        if let Some(s) = &self.schedules {
            for p in &planned {
                s.put(p).await?;
            }
            for gone in old.schedules.iter().filter(|n| !planned.iter().any(|p| &p.name == *n)) {
                s.delete(gone).await?;
            }
        }
        let stale: Vec<Registration> =
            old.endpoints.iter().filter(|o| !wanted.iter().any(|w| w.endpoint == o.endpoint)).cloned().collect();
        self.data.webhooks.release(&stale).await?;
        let record = TriggerRecord {
            version_id: active.clone(),
            endpoints: wanted,
            schedules: planned.iter().map(|p| p.name.clone()).collect(),
        };
        self.data.webhooks.set_record(workflow_id, Scope::Production, &record).await?;
        tracing::info!(workflowId = %workflow_id, versionId = %active, endpoints = record.endpoints.len(), schedules = record.schedules.len(), "workflow published");
        Ok(active)
    }

    /// Claims an endpoint, taking a stale claim over.
    async fn claim(&self, r: &Registration) -> Result<std::result::Result<(), Holder>> {
        let hooks = &self.data.webhooks;
        for _ in 0..3 {
            let holder = match hooks.claim(r).await? {
                Ok(()) => return Ok(Ok(())),
                Err(h) => h,
            };
            if holder.workflow_id.is_empty() {
                continue; // released in between: claim again
            }
            if self.serves(&holder).await? {
                return Ok(Err(holder));
            }
            match hooks.take_over(r, &holder).await? {
                Ok(()) => return Ok(Ok(())),
                Err(_) => continue,
            }
        }
        Err(TriggerError::Conflict(format!("the path {} {} keeps changing hands; try again", r.endpoint.method, r.endpoint.path)))
    }

    /// Whether a holder's workflow still serves the endpoint (live at that version).
    async fn serves(&self, h: &Holder) -> Result<bool> {
        Ok(self
            .data
            .workflows
            .meta(&h.workflow_id)
            .await?
            .is_some_and(|m| !m.is_archived && m.active_version_id.as_deref() == Some(h.version_id.as_str())))
    }

    async fn conflict(&self, r: &Registration, holder: &Holder) -> TriggerError {
        let name = match self.data.workflows.meta(&holder.workflow_id).await {
            Ok(Some(m)) => format!("\"{}\" ({})", m.name, m.id),
            _ => holder.workflow_id.clone(),
        };
        TriggerError::Conflict(format!(
            "The URL path that the \"{}\" node uses ({} /{}) is already taken by the published workflow {name}. Change the path (or method) and publish again.",
            r.endpoint.node,
            r.endpoint.method,
            r.endpoint.path
        ))
    }

    /// Takes the workflow off its triggers: schedules deleted, paths released.
    async fn deactivate(&self, workflow_id: &str) -> Result<()> {
        let old = self.data.webhooks.record(workflow_id, Scope::Production).await?;
        if let Some(s) = &self.schedules {
            for name in &old.schedules {
                s.delete(name).await?;
            }
        } else if !old.schedules.is_empty() {
            tracing::warn!(workflowId = %workflow_id, "schedules recorded but no scheduler configured: they cannot be deleted from here");
        }
        self.data.webhooks.release(&old.endpoints).await?;
        self.data.webhooks.set_record(workflow_id, Scope::Production, &TriggerRecord::default()).await?;
        Ok(())
    }

    pub async fn unpublish(&self, workflow_id: &str) -> Result<()> {
        self.data.workflows.unpublish(workflow_id).await?;
        self.deactivate(workflow_id).await?;
        tracing::info!(workflowId = %workflow_id, "workflow unpublished");
        Ok(())
    }

    /// Archives (and so unpublishes); `false` when it was archived already.
    pub async fn archive(&self, workflow_id: &str) -> Result<bool> {
        let changed = self.data.workflows.archive(workflow_id).await?;
        self.deactivate(workflow_id).await?;
        self.data.webhooks.clear_test(workflow_id).await?;
        Ok(changed)
    }
}
