//! Creates the deployment's tables and queues from [`crate::deployment`]
//! (idempotent). Used by the local cloud at start and by tests; in AWS the
//! SAM template creates the same resources.

use crate::aws::AwsClients;
use crate::config::Config;
use crate::deployment::{KeyType, QueueDef, TableDef, QUEUES, TABLES};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType as DynKeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;

/// Local name of a resource: `<prefix>-<suffix>`.
pub fn local_name(prefix: &str, suffix: &str) -> String {
    format!("{prefix}-{suffix}")
}

/// Creates every table and queue under `prefix` (skipping those that exist)
/// and records their names and URLs in `config`.
pub async fn provision(clients: &AwsClients, config: &mut Config, prefix: &str) -> Result<(), StoreError> {
    for table in TABLES {
        let name = local_name(prefix, table.local_suffix);
        create_table(&clients.dynamo, table, &name).await?;
        config.set_table(table.id, name);
    }
    for queue in QUEUES {
        let url = create_queue(&clients.sqs, queue, prefix).await?;
        config.set_queue_url(queue.id, url);
    }
    provision_scheduler(clients, config, prefix).await
}

/// A queue's ARN (what event sources and schedules name it by).
pub async fn queue_arn(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> Result<String, StoreError> {
    Ok(sqs
        .get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(StoreError::sqs)?
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .unwrap_or_default())
}

/// The EventBridge Scheduler group published schedules go in (the SAM
/// template's `ScheduleGroup`), targeting the Runs queue.
async fn provision_scheduler(clients: &AwsClients, config: &mut Config, prefix: &str) -> Result<(), StoreError> {
    let group = local_name(prefix, "workflows");
    let sched = |e: &dyn std::error::Error| StoreError::Aws { service: "scheduler", message: e.to_string() };
    match clients.scheduler.create_schedule_group().name(&group).send().await {
        Ok(_) => {}
        Err(e) if e.as_service_error().is_some_and(|s| s.is_conflict_exception()) => {}
        Err(e) => return Err(sched(&e)),
    }
    let runs = config.queue_url(crate::deployment::QueueId::Runs)?.to_owned();
    let queue_arn = queue_arn(&clients.sqs, &runs).await?;
    config.scheduler = Some(crate::config::SchedulerTarget {
        group,
        role_arn: format!("arn:aws:iam::123456789012:role/{prefix}-scheduler"),
        queue_arn,
    });
    Ok(())
}

fn attr_type(t: KeyType) -> ScalarAttributeType {
    match t {
        KeyType::S => ScalarAttributeType::S,
        KeyType::N => ScalarAttributeType::N,
    }
}

fn attr(name: &str, t: KeyType) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(attr_type(t))
        .build()
        .map_err(StoreError::dynamo)
}

fn key(name: &str, t: DynKeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder().attribute_name(name).key_type(t).build().map_err(StoreError::dynamo)
}

async fn create_table(client: &aws_sdk_dynamodb::Client, def: &TableDef, name: &str) -> Result<(), StoreError> {
    if client.describe_table().table_name(name).send().await.is_ok() {
        return Ok(());
    }
    let mut req = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr(def.partition_key.0, def.partition_key.1)?)
        .key_schema(key(def.partition_key.0, DynKeyType::Hash)?);
    if let Some((sk, t)) = def.sort_key {
        req = req.attribute_definitions(attr(sk, t)?).key_schema(key(sk, DynKeyType::Range)?);
    }
    for (index, pk, sk) in def.indexes {
        req = req
            .attribute_definitions(attr(pk, KeyType::S)?)
            .attribute_definitions(attr(sk, KeyType::S)?)
            .global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(*index)
                    .key_schema(key(pk, DynKeyType::Hash)?)
                    .key_schema(key(sk, DynKeyType::Range)?)
                    .projection(Projection::builder().projection_type(ProjectionType::All).build())
                    .build()
                    .map_err(StoreError::dynamo)?,
            );
    }
    match req.send().await {
        Ok(_) => {}
        // Another process created it between describe and create.
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => return Ok(()),
        Err(e) => return Err(StoreError::dynamo(e)),
    }
    if let Some(ttl) = def.ttl_attribute {
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(ttl)
                    .enabled(true)
                    .build()
                    .map_err(StoreError::dynamo)?,
            )
            .send()
            .await
            .map_err(StoreError::dynamo)?;
    }
    Ok(())
}

/// Creates `<prefix>-<suffix>` and its dead-letter queue with the redrive
/// policy; returns the main queue's URL.
pub async fn create_queue(client: &aws_sdk_sqs::Client, def: &QueueDef, prefix: &str) -> Result<String, StoreError> {
    create_queue_with(
        client,
        &local_name(prefix, def.local_suffix),
        def.visibility_timeout_secs,
        def.max_receive_count,
    )
    .await
}

/// A queue named `name` with DLQ `name-dlq` after `max_receive_count` receives.
pub async fn create_queue_with(
    client: &aws_sdk_sqs::Client,
    name: &str,
    visibility_timeout_secs: u32,
    max_receive_count: u32,
) -> Result<String, StoreError> {
    let dlq_url = client
        .create_queue()
        .queue_name(format!("{name}-dlq"))
        .attributes(QueueAttributeName::MessageRetentionPeriod, "1209600")
        .send()
        .await
        .map_err(StoreError::sqs)?
        .queue_url
        .ok_or_else(|| StoreError::Corrupt("CreateQueue returned no URL".into()))?;
    let dlq_arn = client
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(StoreError::sqs)?
        .attributes
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .ok_or_else(|| StoreError::Corrupt("dead-letter queue has no ARN".into()))?;
    let redrive = serde_json::json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count.to_string()});
    client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::VisibilityTimeout, visibility_timeout_secs.to_string())
        .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
        .send()
        .await
        .map_err(StoreError::sqs)?
        .queue_url
        .ok_or_else(|| StoreError::Corrupt("CreateQueue returned no URL".into()))
}
