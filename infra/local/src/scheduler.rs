//! EventBridge schedules: each scheduled function runs at its rate.

use api::App;
use std::sync::Arc;
use std::time::Duration;
use store::deployment::SCHEDULES;
use tokio::sync::watch;

pub fn spawn_all(app: Arc<App>, shutdown: watch::Receiver<bool>) {
    for &(function, rate_secs) in SCHEDULES {
        let app = app.clone();
        let mut shutdown = shutdown.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(u64::from(rate_secs)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = tick.tick() => crate::dispatch::scheduled(&app, function).await,
                    _ = shutdown.changed() => return,
                }
            }
        });
    }
}
