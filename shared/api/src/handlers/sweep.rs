//! The scheduled sweep: finishes runs whose step died (lease expired),
//! writes late `run-finish` events and expires timed-out confirmations.

use crate::{ApiError, App};

pub async fn handle(app: &App) -> Result<(), ApiError> {
    // Workflow executions (resume due waits, mark dead runs crashed): see executor.rs.
    crate::handlers::executor::sweep(app).await;
    let rt = app.agent().await?;
    let report = agent::sweep::sweep(&rt).await?;
    if report != agent::sweep::SweepReport::default() {
        tracing::info!(?report, "sweep acted");
    }
    Ok(())
}
