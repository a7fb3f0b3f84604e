//! Shared setup for the data repository tests: an isolated table set in
//! moto and the repositories over it.
#![allow(dead_code)]

use protocol::UserId;
use store::data::users_projects::Project;
use store::data::InstanceData;
use store::testing::TestEnv;

pub async fn data() -> (TestEnv, InstanceData) {
    let env = TestEnv::new().await;
    let data = InstanceData::new(&env.clients, &env.config).expect("repositories");
    (env, data)
}

/// A user with their personal project.
pub async fn user(data: &InstanceData, name: &str) -> (UserId, Project) {
    let id = UserId(format!("{name}-{}", uuid::Uuid::new_v4().simple()));
    let (_, project) =
        data.projects.create_user(&id, &format!("{name}@example.com"), Some(name), None).await.expect("create user");
    (id, project)
}
