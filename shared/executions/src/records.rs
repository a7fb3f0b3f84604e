//! The execution record's life cycle as conditional DynamoDB writes: claim
//! with a lease, renew, park as `waiting`, finish, crash, cancel.
//!
//! The store's `Executions` repository owns the meta item (`exec#<id>/meta`)
//! and the run data; this module adds lease and cancel attributes to the
//! meta item and two index items beside it, so the sweep can find work
//! without a scan (the meta item's own `gsi1` already lists executions per
//! workflow):
//! - `exec#<id>/lease`: `gsi1pk=exec:running`, `gsi1sk=<leaseUntil>#<id>`
//! - `exec#<id>/wait`: `gsi1pk=exec:waiting`, `gsi1sk=<waitTill>#<id>`
//!
//! Index items are hints: every action re-checks the meta item under a
//! condition, and each status change writes meta and index items in one
//! transaction.

use crate::error::Result;
use aws_sdk_dynamodb::types::AttributeValue;
use store::data::db::{self, get_s, key, s, tx_delete, tx_put, tx_update, Item, Table};
use store::data::executions::ExecutionStatus;
use store::StoreError;

const RUNNING_INDEX: &str = "exec:running";
const WAITING_INDEX: &str = "exec:waiting";

fn pk(id: &str) -> String {
    format!("exec#{id}")
}

/// What the life cycle needs from the meta item.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub status: ExecutionStatus,
    pub wait_till: Option<String>,
    pub lease_until: Option<String>,
    pub cancel_requested: bool,
    pub error_message: Option<String>,
}

fn parse_status(v: &str) -> ExecutionStatus {
    serde_json::from_value(serde_json::Value::String(v.to_owned()))
        .unwrap_or(ExecutionStatus::Unknown)
}

impl Meta {
    fn from_item(item: &Item) -> Meta {
        Meta {
            status: get_s(item, "status")
                .map(parse_status)
                .unwrap_or(ExecutionStatus::Unknown),
            wait_till: get_s(item, "waitTill").map(str::to_owned),
            lease_until: get_s(item, "leaseUntil").map(str::to_owned),
            cancel_requested: matches!(
                item.get("cancelRequested"),
                Some(AttributeValue::Bool(true))
            ),
            error_message: get_s(item, "errorMessage").map(str::to_owned),
        }
    }
}

/// Why a claim did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    Claimed,
    Refused,
}

#[derive(Clone, Debug)]
pub(crate) struct Records {
    table: Table,
    /// Turned on at each claim: the sweep watches leases while any exist.
    pub sweep: Option<store::sweep_schedule::SweepFlag>,
}

/// The `gsi1` partitions of the index items: what the sweep watches.
pub const WATCHED_INDEXES: [&str; 2] = [RUNNING_INDEX, WAITING_INDEX];

fn marker(id: &str, sk: &str, index: &str, at: &str) -> Item {
    let mut item = key(pk(id), sk);
    item.insert("gsi1pk".into(), s(index));
    item.insert("gsi1sk".into(), s(format!("{at}#{id}")));
    item.insert("executionId".into(), s(id));
    item
}

impl Records {
    pub fn new(table: Table) -> Self {
        Records { table, sweep: None }
    }

    pub async fn meta(&self, id: &str) -> Result<Option<Meta>> {
        Ok(self
            .table
            .get_raw(&pk(id), "meta")
            .await?
            .as_ref()
            .map(Meta::from_item))
    }

    /// Takes the execution for `owner` until `lease_until`: from `new`, or
    /// from `waiting` once its time has come. A running execution is never
    /// taken over, even with an expired lease (its effects are unknown: the
    /// sweep marks it crashed instead).
    pub async fn claim(
        &self,
        id: &str,
        from: ExecutionStatus,
        owner: &str,
        lease_until: &str,
        now: &str,
    ) -> Result<Claim> {
        self.claim_if(id, from, false, owner, lease_until, now).await
    }

    /// Takes a `waiting` execution whatever its time (a webhook call or form
    /// submission resumes it): of concurrent resumers exactly one gets it.
    pub async fn claim_for_resume(&self, id: &str, owner: &str, lease_until: &str) -> Result<Claim> {
        self.claim_if(id, ExecutionStatus::Waiting, true, owner, lease_until, &db::now_iso()).await
    }

    async fn claim_if(
        &self,
        id: &str,
        from: ExecutionStatus,
        any_time: bool,
        owner: &str,
        lease_until: &str,
        now: &str,
    ) -> Result<Claim> {
        // The store writes `startedAt: NULL` at create, so `if_not_exists`
        // cannot be used: a first run stamps it, a resume keeps it.
        let (set_started, condition) = match from {
            ExecutionStatus::New => (", startedAt = :now", "attribute_exists(pk) AND #st = :new"),
            _ if any_time => ("", "attribute_exists(pk) AND #st = :waiting"),
            _ => (
                "",
                "attribute_exists(pk) AND #st = :waiting AND waitTill <= :now",
            ),
        };
        // The index item first: if we die right after the claim, the sweep
        // still finds the execution. A claim that then fails leaves a stale
        // hint, which the sweep re-checks and drops.
        self.reindex_lease(id, lease_until).await?;
        // The sweep watches from now on (store::sweep_schedule); if it
        // cannot, nothing is claimed and the message comes back.
        if let Some(flag) = &self.sweep {
            flag.arm().await?;
        }
        // One conditional UpdateItem: atomic on its own, so of concurrent
        // deliveries exactly one claims.
        self.table.count();
        let mut values = std::collections::HashMap::from([
            (":running".to_owned(), s("running")),
            ((if from == ExecutionStatus::New { ":new" } else { ":waiting" }).to_owned(), s(from.as_str())),
            (":owner".to_owned(), s(owner)),
            (":lease".to_owned(), s(lease_until)),
            (":null".to_owned(), AttributeValue::Null(true)),
            (":false".to_owned(), AttributeValue::Bool(false)),
        ]);
        // DynamoDB refuses values no expression uses.
        if condition.contains(":now") || set_started.contains(":now") {
            values.insert(":now".to_owned(), s(now));
        }
        let res = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), "meta")))
            .update_expression(format!(
                "SET #st = :running, leaseOwner = :owner, leaseUntil = :lease, waitTill = :null, \
                 cancelRequested = if_not_exists(cancelRequested, :false){set_started}"
            ))
            .condition_expression(condition)
            .expression_attribute_names("#st", "status")
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        match res {
            Ok(_) => {}
            Err(e) if db::is_condition_failed(&e) => return Ok(Claim::Refused),
            Err(e) => return Err(StoreError::dynamo(e).into()),
        }
        self.drop_index(id, "wait").await?;
        Ok(Claim::Claimed)
    }

    /// Extends the lease; `Ok(None)` when the lease is no longer ours
    /// (another owner, or the sweep marked it crashed). Returns the meta
    /// item as now stored, so the caller sees a cancel request.
    pub async fn renew(&self, id: &str, owner: &str, lease_until: &str) -> Result<Option<Meta>> {
        self.table.count();
        let res = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), "meta")))
            .update_expression("SET leaseUntil = :lease")
            .condition_expression("#st = :running AND leaseOwner = :owner")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":running", s("running"))
            .expression_attribute_values(":owner", s(owner))
            .expression_attribute_values(":lease", s(lease_until))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await;
        let meta = match res {
            Ok(out) => Meta::from_item(&out.attributes.unwrap_or_default()),
            Err(e) if db::is_condition_failed(&e) => return Ok(None),
            Err(e) => return Err(StoreError::dynamo(e).into()),
        };
        // The index item follows; if this put is lost, the sweep's
        // conditional write still sees the live lease on the meta item.
        self.table.count();
        self.table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(marker(id, "lease", RUNNING_INDEX, lease_until)))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(Some(meta))
    }

    /// Ends a run we own with a final status. `false` when the lease was lost.
    pub async fn finish(
        &self,
        id: &str,
        owner: &str,
        status: ExecutionStatus,
        error: Option<&str>,
    ) -> Result<bool> {
        let t = &self.table.name;
        let mut values = vec![
            (":st", s(status.as_str())),
            (":running", s("running")),
            (":owner", s(owner)),
            (":now", s(db::now_iso())),
        ];
        let mut set = "SET #st = :st, stoppedAt = :now".to_owned();
        if let Some(e) = error {
            set.push_str(", errorMessage = :err");
            values.push((":err", s(e)));
        }
        let tx = vec![
            tx_update(
                t,
                key(pk(id), "meta"),
                &format!("{set} REMOVE leaseOwner, leaseUntil"),
                Some("#st = :running AND leaseOwner = :owner"),
                &[("#st", "status")],
                values,
            )?,
            tx_delete(t, key(pk(id), "lease"), None)?,
        ];
        match self.table.transact(tx, "finish").await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Parks a run we own as `waiting` until `wait_till` (stored form).
    pub async fn park(&self, id: &str, owner: &str, wait_till: &str) -> Result<bool> {
        let t = &self.table.name;
        let tx = vec![
            tx_update(
                t,
                key(pk(id), "meta"),
                "SET #st = :waiting, waitTill = :wt REMOVE leaseOwner, leaseUntil",
                Some("#st = :running AND leaseOwner = :owner"),
                &[("#st", "status")],
                vec![
                    (":waiting", s("waiting")),
                    (":wt", s(wait_till)),
                    (":running", s("running")),
                    (":owner", s(owner)),
                ],
            )?,
            tx_delete(t, key(pk(id), "lease"), None)?,
            tx_put(t, marker(id, "wait", WAITING_INDEX, wait_till), None)?,
        ];
        match self.table.transact(tx, "park").await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// `running` with a lease that expired before `now` → `crashed`.
    pub async fn crash_if_expired(&self, id: &str, now: &str) -> Result<bool> {
        let t = &self.table.name;
        let tx = vec![
            tx_update(
                t,
                key(pk(id), "meta"),
                "SET #st = :crashed, stoppedAt = :now, errorMessage = :err REMOVE leaseOwner, leaseUntil",
                Some("#st = :running AND leaseUntil < :now"),
                &[("#st", "status")],
                vec![
                    (":crashed", s("crashed")),
                    (":running", s("running")),
                    (":now", s(now)),
                    (":err", s("The execution stopped unexpectedly (its executor died or lost its lease); it was not retried because its effects are unknown")),
                ],
            )?,
            tx_delete(t, key(pk(id), "lease"), None)?,
        ];
        match self.table.transact(tx, "crash").await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets the cancel flag a running execution polls. `None`: no such execution.
    pub async fn request_cancel(&self, id: &str) -> Result<Option<Meta>> {
        self.table.count();
        let res = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), "meta")))
            .update_expression("SET cancelRequested = :t")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await;
        match res {
            Ok(out) => Ok(Some(Meta::from_item(&out.attributes.unwrap_or_default()))),
            Err(e) if db::is_condition_failed(&e) => Ok(None),
            Err(e) => Err(StoreError::dynamo(e).into()),
        }
    }

    /// Cancels an execution nobody runs (`new` or `waiting`) directly.
    pub async fn cancel_idle(&self, id: &str) -> Result<bool> {
        let t = &self.table.name;
        let tx = vec![
            tx_update(
                t,
                key(pk(id), "meta"),
                "SET #st = :canceled, stoppedAt = :now, waitTill = :null, errorMessage = :err",
                Some("#st = :new OR #st = :waiting"),
                &[("#st", "status")],
                vec![
                    (":canceled", s("canceled")),
                    (":new", s("new")),
                    (":waiting", s("waiting")),
                    (":now", s(db::now_iso())),
                    (":null", AttributeValue::Null(true)),
                    (":err", s("The execution was canceled")),
                ],
            )?,
            tx_delete(t, key(pk(id), "wait"), None)?,
        ];
        match self.table.transact(tx, "cancel").await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Finishes a record that never ran (bad stored document, failed enqueue).
    pub async fn fail_unstarted(&self, id: &str, error: &str) -> Result<bool> {
        self.table.count();
        let res = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), "meta")))
            .update_expression("SET #st = :error, stoppedAt = :now, errorMessage = :err")
            .condition_expression("#st = :new")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":error", s("error"))
            .expression_attribute_values(":new", s("new"))
            .expression_attribute_values(":now", s(db::now_iso()))
            .expression_attribute_values(":err", s(error))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e).into()),
        }
    }

    /// Execution ids in an index whose time (`gsi1sk` prefix) is at or before `now`.
    async fn due(&self, index: &str, now: &str, limit: usize) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            self.table.count();
            let page = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .index_name("gsi1")
                .key_condition_expression("gsi1pk = :pk AND gsi1sk <= :now")
                .expression_attribute_values(":pk", s(index))
                // `~` sorts after every id character: includes entries at exactly `now`.
                .expression_attribute_values(":now", s(format!("{now}#~")))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            out.extend(
                page.items
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|i| get_s(i, "executionId").map(str::to_owned)),
            );
            if out.len() >= limit {
                out.truncate(limit);
                return Ok(out);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    pub async fn due_waiting(&self, now: &str, limit: usize) -> Result<Vec<String>> {
        self.due(WAITING_INDEX, now, limit).await
    }

    pub async fn expired_leases(&self, now: &str, limit: usize) -> Result<Vec<String>> {
        self.due(RUNNING_INDEX, now, limit).await
    }

    /// Re-points a stale index item at the time the meta item really holds
    /// (a lost index write, or a resume message that was lost after claim).
    pub async fn reindex_wait(&self, id: &str, wait_till: &str) -> Result<()> {
        self.put_marker(id, "wait", WAITING_INDEX, wait_till).await
    }

    pub async fn reindex_lease(&self, id: &str, lease_until: &str) -> Result<()> {
        self.put_marker(id, "lease", RUNNING_INDEX, lease_until).await
    }

    async fn put_marker(&self, id: &str, sk: &str, index: &str, at: &str) -> Result<()> {
        self.table.count();
        self.table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(marker(id, sk, index, at)))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }

    pub async fn drop_index(&self, id: &str, sk: &str) -> Result<()> {
        self.table.count();
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), sk)))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }
}
