//! The scheduled sweep: finishes runs whose step died (lease expired),
//! writes late `run-finish` events and expires timed-out confirmations.

use crate::{ApiError, App};

pub async fn handle(app: &App) -> Result<(), ApiError> {
    let rt = app.agent().await?;
    let report = agent::sweep::sweep(&rt).await?;
    if report != agent::sweep::SweepReport::default() {
        tracing::info!(?report, "sweep acted");
    }
    Ok(())
}
