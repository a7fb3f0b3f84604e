//! Starts a local cloud on a free port over a fresh, isolated set of tables.

use local_cloud::{start, Options, Running};
use store::testing::TestEnv;

pub const ALICE_KEY: &str = "alice-key-for-tests";
pub const BOB_KEY: &str = "bob-key-for-tests";

pub async fn cloud() -> Running {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.bootstrap_keys = vec![("alice".into(), ALICE_KEY.into()), ("bob".into(), BOB_KEY.into())];
    start(Options { config, prefix: env.prefix.clone(), port: 0, run_consumers: false, run_schedules: false })
        .await
        .expect("local cloud starts")
}
