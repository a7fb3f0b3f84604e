//! The scheduled side: resume `waiting` executions whose time has come,
//! and mark `running` executions whose lease expired as `crashed`. Needs
//! only the Executions table and the Runs queue (what the sweep function
//! is granted), not the instance data.

use crate::error::{ExecutionError, Result};
use crate::records::Records;
use crate::RunMessage;
use std::time::Duration;
use store::data::db::{self, Table};
use store::deployment::{QueueId, TableId};
use store::{AwsClients, Config};

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub resumed: usize,
    pub crashed: usize,
}

#[derive(Clone, Debug)]
pub struct Sweeper {
    pub(crate) records: Records,
    executions: store::data::Executions,
    sqs: aws_sdk_sqs::Client,
    /// The Runs queue; `None` in a process that only stops executions.
    queue_url: Option<String>,
    /// Where a settled execution's waiter message goes (the agent's Steps
    /// queue); `None` in a process that has no waiters to wake.
    pub steps_queue_url: Option<String>,
    /// A due execution whose resume message got lost is enqueued again
    /// after this long (duplicates are harmless, a flood is not).
    pub redrive_after: Duration,
    /// At most this many executions per index per sweep.
    pub batch: usize,
}

impl Sweeper {
    pub fn new(
        executions: &store::data::Executions,
        sqs: aws_sdk_sqs::Client,
        runs_queue_url: impl Into<String>,
    ) -> Self {
        Sweeper::build(executions, sqs, Some(runs_queue_url.into()))
    }

    fn build(executions: &store::data::Executions, sqs: aws_sdk_sqs::Client, runs_queue_url: Option<String>) -> Self {
        Sweeper {
            records: Records::new(executions.table().clone()),
            executions: executions.clone(),
            steps_queue_url: None,
            sqs,
            queue_url: runs_queue_url,
            redrive_after: Duration::from_secs(300),
            batch: 500,
        }
    }

    /// From the configuration: the Executions table and the Runs queue only.
    pub fn from_config(clients: &AwsClients, config: &Config) -> Result<Self> {
        let table = Table::new(clients.dynamo.clone(), config.table(TableId::Executions)?);
        let url = config.queue_url(QueueId::Runs)?;
        let mut sweeper = Sweeper::new(&store::data::Executions::new(table), clients.sqs.clone(), url);
        sweeper.steps_queue_url = config.queue_url(QueueId::Steps).ok().map(str::to_owned);
        Ok(sweeper)
    }

    /// Wakes the execution's waiter, if one is registered: takes its message
    /// (exactly one settler gets it) and sends it to the Steps queue. Called
    /// after every transition that settles an execution (finished, parked as
    /// `waiting`, crashed, canceled). A lost message is not fatal: the
    /// waiting chain has a deadline, and the agent sweep resumes it then.
    pub(crate) async fn notify(&self, id: &str) {
        let message = match self.executions.take_waiter(id).await {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(executionId = %id, error = %e, "could not read the execution's waiter; its deadline will resume it");
                return;
            }
        };
        let Some(url) = &self.steps_queue_url else {
            tracing::warn!(executionId = %id, "an agent waits on this execution but this process has no Steps queue; its deadline will resume it");
            return;
        };
        match self.sqs.send_message().queue_url(url).message_body(message).send().await {
            Ok(_) => tracing::info!(executionId = %id, "waiting agent step queued"),
            Err(e) => tracing::warn!(executionId = %id, error = %store::StoreError::sqs(e), "could not queue the waiting agent step; its deadline will resume it"),
        }
    }

    /// Stops an execution: the cancel flag a running one polls, or a direct
    /// cancel of one nobody runs (`new`, `waiting`). `None`: no such execution.
    pub async fn stop(&self, id: &str) -> Result<Option<crate::ExecutionStatus>> {
        let Some(meta) = self.records.request_cancel(id).await? else { return Ok(None) };
        if matches!(meta.status, crate::ExecutionStatus::New | crate::ExecutionStatus::Waiting)
            && self.records.cancel_idle(id).await?
        {
            tracing::info!(executionId = %id, "execution canceled before it ran");
            self.notify(id).await;
            return Ok(Some(crate::ExecutionStatus::Canceled));
        }
        Ok(Some(meta.status))
    }

    /// One that only stops executions (and wakes their waiters): needs the
    /// Executions table, not the Runs queue (the cancel function).
    pub fn stopper_from_config(clients: &AwsClients, config: &Config) -> Result<Self> {
        let table = Table::new(clients.dynamo.clone(), config.table(TableId::Executions)?);
        let mut sweeper = Sweeper::build(&store::data::Executions::new(table), clients.sqs.clone(), None);
        sweeper.steps_queue_url = config.queue_url(QueueId::Steps).ok().map(str::to_owned);
        Ok(sweeper)
    }

    pub(crate) async fn enqueue(&self, id: &str) -> Result<()> {
        self.enqueue_delayed(id, Duration::ZERO).await
    }

    /// SQS delays up to 15 minutes; longer waits are left to the sweep.
    pub(crate) async fn enqueue_delayed(&self, id: &str, delay: Duration) -> Result<()> {
        let body = serde_json::to_string(&RunMessage {
            execution_id: id.into(),
        })
        .map_err(|e| ExecutionError::Queue(e.to_string()))?;
        self.enqueue_body(&body, delay).await
    }

    /// Sends any Runs message (an execution, a schedule tick), delayed up to 15 minutes.
    pub(crate) async fn enqueue_body(&self, body: &str, delay: Duration) -> Result<()> {
        let url = self.queue_url.as_deref().ok_or_else(|| ExecutionError::Queue("this process has no Runs queue".into()))?;
        self.sqs
            .send_message()
            .queue_url(url)
            .message_body(body)
            .delay_seconds(delay.as_secs().min(900) as i32)
            .send()
            .await
            .map_err(|e| ExecutionError::Queue(store::StoreError::sqs(e).to_string()))?;
        Ok(())
    }

    /// Enqueues every `waiting` execution whose `waitTill` has passed; the
    /// executor's claim re-checks the time, so an early or repeated message
    /// does nothing.
    pub async fn resume_due(&self) -> Result<usize> {
        let now = db::now_iso();
        let due = self.records.due_waiting(&now, self.batch).await?;
        let mut sent = 0;
        for id in due {
            // Moves the index entry ahead first, so the next sweeps do not
            // enqueue it again while the message is in flight (and a fast
            // executor's claim, which drops the entry, comes after this).
            // If the send fails, the entry comes due again later.
            let later = db::iso(time::OffsetDateTime::now_utc() + self.redrive_after);
            self.records.reindex_wait(&id, &later).await?;
            self.enqueue(&id).await?;
            tracing::info!(executionId = %id, "waiting execution is due: queued");
            sent += 1;
        }
        Ok(sent)
    }

    /// Marks `running` executions whose lease expired as `crashed` (their
    /// executor died: timeout, out of memory, ...). They are not re-run.
    pub async fn mark_crashed(&self) -> Result<usize> {
        let now = db::now_iso();
        let expired = self.records.expired_leases(&now, self.batch).await?;
        let mut crashed = 0;
        for id in expired {
            if self.records.crash_if_expired(&id, &now).await? {
                tracing::warn!(executionId = %id, "lease expired while running: marked crashed");
                self.notify(&id).await;
                crashed += 1;
                continue;
            }
            // The index was stale (a renewal's index write was lost, or the
            // run ended): re-point it at the real lease, or drop it.
            match self.records.meta(&id).await? {
                Some(m) if m.status == crate::ExecutionStatus::Running => {
                    if let Some(lease) = m.lease_until {
                        self.records.reindex_lease(&id, &lease).await?;
                    }
                }
                _ => self.records.drop_index(&id, "lease").await?,
            }
        }
        Ok(crashed)
    }

    /// Both, as the minute sweep runs them.
    pub async fn sweep(&self) -> Result<SweepReport> {
        // Boxed: keeps the sweep function's future shallow (see `run_execution`).
        Ok(SweepReport {
            crashed: Box::pin(self.mark_crashed()).await?,
            resumed: Box::pin(self.resume_due()).await?,
        })
    }
}
