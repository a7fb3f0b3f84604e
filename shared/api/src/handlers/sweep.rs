//! The scheduled sweep: finishes runs whose step died.

use crate::{ApiError, App};

pub async fn handle(_app: &App) -> Result<(), ApiError> {
    // Nothing to sweep until the agent runtime lands (no runs exist yet).
    Ok(())
}
