//! The sweep's schedule is on exactly while some part has work, against
//! moto (DynamoDB for the flags and the index, EventBridge Scheduler for the
//! schedule): a fresh deployment's first sweep turns it off, a writer's arm
//! turns it on, work keeps it on, an arm within the grace keeps it on even
//! when the index does not show the work yet, and an arm racing the sweep's
//! disarm wins.

use aws_sdk_dynamodb::types::AttributeValue;
use std::time::Duration;
use store::deployment::TableId;
use store::sweep_schedule::{rest_if_idle, SweepFlag, SweepSchedule};
use store::testing::TestEnv;

const PARTITION: &str = "runlease#0";

struct Fixture {
    env: TestEnv,
    schedule: SweepSchedule,
    flag: SweepFlag,
    table: String,
}

async fn fixture() -> Fixture {
    let env = TestEnv::new().await;
    let schedule = SweepSchedule::new(env.clients.scheduler.clone(), format!("{}-sweep", env.prefix));
    schedule
        .provision("arn:aws:lambda:us-east-1:123456789012:function:sweep", "arn:aws:iam::123456789012:role/sweep")
        .await
        .expect("schedule");
    let table = env.config.table(TableId::Agent).expect("table").to_owned();
    let flag = SweepFlag::new(env.clients.dynamo.clone(), &table, "agent", vec![PARTITION.into()], schedule.clone());
    Fixture { env, schedule, flag, table }
}

impl Fixture {
    /// An index entry of the watched partition (a chain's lease).
    async fn put_work(&self) {
        self.env
            .clients
            .dynamo
            .put_item()
            .table_name(&self.table)
            .item("pk", AttributeValue::S("run#r1".into()))
            .item("sk", AttributeValue::S("agent#a1".into()))
            .item("gsi1pk", AttributeValue::S(PARTITION.into()))
            .item("gsi1sk", AttributeValue::S("0000000000001#r1#a1".into()))
            .send()
            .await
            .expect("put");
    }

    async fn remove_work(&self) {
        self.env
            .clients
            .dynamo
            .delete_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S("run#r1".into()))
            .key("sk", AttributeValue::S("agent#a1".into()))
            .send()
            .await
            .expect("delete");
    }

    /// The clock moves past the grace: the last arm is old.
    async fn age_the_arm(&self) {
        let old = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
            - 2 * store::sweep_schedule::GRACE.as_millis() as u64;
        self.env
            .clients
            .dynamo
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S("sweep".into()))
            .key("sk", AttributeValue::S("agent".into()))
            .update_expression("SET armedAt = :t")
            .expression_attribute_values(":t", AttributeValue::N(old.to_string()))
            .send()
            .await
            .expect("age");
    }

    async fn rest(&self) -> bool {
        rest_if_idle(&self.schedule, std::slice::from_ref(&self.flag)).await.expect("rest")
    }

    async fn on(&self) -> bool {
        self.schedule.enabled().await.expect("schedule state")
    }
}

#[tokio::test]
async fn the_schedule_is_on_exactly_while_there_is_work() {
    let f = fixture().await;
    // A fresh deployment: on; its first sweep finds nothing and turns it off.
    assert!(f.on().await);
    assert!(f.rest().await);
    assert!(!f.on().await && !f.flag.armed().await.unwrap());
    assert!(f.rest().await, "resting again is harmless");

    // Work appears and its writer arms: on.
    f.put_work().await;
    f.flag.arm().await.expect("arm");
    assert!(f.on().await && f.flag.armed().await.unwrap());
    // The sweep leaves it on while the work is there, however old the arm.
    f.age_the_arm().await;
    assert!(!f.rest().await);
    assert!(f.on().await);

    // Work gone but armed within the grace (a newer entry may not show in
    // the index yet): still on.
    f.flag.arm().await.expect("arm");
    f.remove_work().await;
    assert!(!f.rest().await);
    assert!(f.on().await);
    // The grace has passed: off, until the next arm.
    f.age_the_arm().await;
    assert!(f.rest().await);
    assert!(!f.on().await);
    f.flag.arm().await.expect("arm");
    assert!(f.on().await);
}

/// The sweep's disarm is held back in moto while a writer arms: the
/// writer's fresh arm makes the disarm's condition fail, the schedule stays on.
#[tokio::test]
async fn an_arm_racing_the_sweeps_disarm_keeps_the_schedule_on() {
    let f = fixture().await;
    f.flag.arm().await.expect("arm");
    f.age_the_arm().await;
    store::testing::delay_next_request(&f.table, "UpdateItem", Duration::from_millis(600));
    let (schedule, flag) = (f.schedule.clone(), f.flag.clone());
    let sweep = tokio::spawn(async move { rest_if_idle(&schedule, &[flag]).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    f.put_work().await;
    f.flag.arm().await.expect("arm");
    assert!(!sweep.await.expect("sweep").expect("rest"), "the sweep must not rest");
    assert!(f.on().await && f.flag.armed().await.unwrap());
}
