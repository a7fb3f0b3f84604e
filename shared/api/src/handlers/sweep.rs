//! The scheduled sweep: finishes runs whose step died (lease expired),
//! writes late `run-finish` events and expires timed-out confirmations;
//! then, with nothing left to watch, turns its own schedule off until a run
//! or an execution turns it on again (`store::sweep_schedule`).

use crate::{ApiError, App};
use store::sweep_schedule::{rest_if_idle, SweepSchedule};

pub async fn handle(app: &App) -> Result<(), ApiError> {
    execution_sweep(app).await;
    let rt = app.agent().await?;
    let report = agent::sweep::sweep(&rt).await?;
    if report != agent::sweep::SweepReport::default() {
        tracing::info!(?report, "sweep acted");
    }
    rest(app).await
}

/// Turns the schedule off when neither part has work left (the function
/// requires `SWEEP_SCHEDULE`; a test app without one has no schedule).
async fn rest(app: &App) -> Result<(), ApiError> {
    if app.config.var(store::sweep_schedule::VARIABLE).is_none() {
        return Ok(());
    }
    let internal = |e: &dyn std::fmt::Display| ApiError::Internal(e.to_string());
    let schedule = SweepSchedule::from_config(&app.clients.scheduler, &app.config).map_err(|e| internal(&e))?;
    let agent = store::sweep_schedule::agent_flag(&app.clients, &app.config).map_err(|e| internal(&e))?;
    let executions = executions::sweep_flag(&app.clients, &app.config).map_err(|e| internal(&e))?;
    let flags: Vec<_> = agent.into_iter().chain(executions).collect();
    if rest_if_idle(&schedule, &flags).await? {
        tracing::info!(schedule = %schedule.name(), "nothing left to sweep: schedule off");
    }
    Ok(())
}

/// The sweep's part for workflow executions: resume `waiting` ones that
/// are due, mark `running` ones whose lease expired as `crashed`. Errors
/// are logged, so the rest of the sweep still runs.
async fn execution_sweep(app: &App) {
    let report = match executions::Sweeper::from_config(&app.clients, &app.config) {
        Ok(s) => s.sweep().await,
        Err(e) => Err(e),
    };
    match report {
        Ok(r) if r != executions::SweepReport::default() => tracing::info!(resumed = r.resumed, crashed = r.crashed, "execution sweep acted"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "execution sweep failed"),
    }
}
