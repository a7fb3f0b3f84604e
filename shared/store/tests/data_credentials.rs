//! Credentials against moto: secrets are encrypted at rest, returned by no
//! read path, decrypted only by `decrypt_secret`; listing filters; the KMS
//! key provider (moto's KMS) and the local one.

mod data_support;

use serde::Serialize;
use serde_json::json;
use std::sync::Arc;
use store::data::credentials::{CredentialQuery, NewCredential, SecretData};
use store::data::keys::{KeyProvider, KmsKeyProvider, LocalKeyProvider};
use store::data::users_projects::ProjectRole;
use store::data::InstanceData;

const SECRET: &str = "xoxb-SUPER-SECRET-TOKEN-4242";

fn secret() -> SecretData {
    SecretData::new(json!({"accessToken": SECRET, "nested": {"password": "hunter2-SECRET"}}))
}

fn assert_clean<T: Serialize + std::fmt::Debug>(what: &str, v: &T) {
    let json = serde_json::to_string(v).unwrap();
    let debug = format!("{v:?}");
    for needle in [SECRET, "hunter2-SECRET"] {
        assert!(!json.contains(needle), "{what} serialises the secret: {json}");
        assert!(!debug.contains(needle), "{what} debug-prints the secret");
    }
}

#[tokio::test]
async fn no_read_path_returns_the_secret() {
    let (env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let (bob, bob_home) = data_support::user(&data, "bob").await;
    let team = data.projects.create_team_project("Ops", &alice).await.unwrap();
    data.projects.set_member(&team.id, &bob, ProjectRole::Editor).await.unwrap();
    let c = &data.credentials;

    let slack = c
        .create(NewCredential {
            name: "Slack bot".into(),
            kind: "slackApi".into(),
            description: Some("d".repeat(300)),
            project_id: home.id.clone(),
            is_managed: false,
            is_global: false,
            secret: secret(),
        })
        .await
        .unwrap();
    assert_clean("create", &slack);
    let notion = c
        .create(NewCredential {
            name: "Team Notion".into(),
            kind: "notionApi".into(),
            description: None,
            project_id: team.id.clone(),
            is_managed: false,
            is_global: false,
            secret: secret(),
        })
        .await
        .unwrap();
    let global = c
        .create(NewCredential {
            name: "Gateway".into(),
            kind: "openAiApi".into(),
            description: None,
            project_id: home.id.clone(),
            is_managed: true,
            is_global: true,
            secret: secret(),
        })
        .await
        .unwrap();
    c.share(&slack.id, &bob_home.id).await.unwrap();

    // Every read path, serialised and debug-printed: no secret anywhere.
    assert_clean("get", &c.get(&slack.id).await.unwrap());
    assert_clean("get_for", &c.get_for(&alice, &slack.id).await.unwrap());
    for (who, q) in [
        (&alice, CredentialQuery::default()),
        (&bob, CredentialQuery::default()),
        (&bob, CredentialQuery { only_shared_with_me: true, ..Default::default() }),
        (&alice, CredentialQuery { kind: Some("slack".into()), ..Default::default() }),
    ] {
        assert_clean("list", &c.list(who, &q).await.unwrap());
    }
    assert_clean("update_meta", &c.update_meta(&slack.id, Some("Slack"), None).await.unwrap());

    // At rest: the stored items hold no plaintext either.
    let raw = env
        .clients
        .dynamo
        .scan()
        .table_name(env.config.table(store::deployment::TableId::Instance).unwrap())
        .send()
        .await
        .unwrap();
    let dump = format!("{:?}", raw.items);
    assert!(!dump.contains(SECRET) && !dump.contains("hunter2"), "plaintext at rest");

    // The one way in.
    let s = c.decrypt_secret(&slack.id).await.unwrap();
    assert_eq!(s.expose()["accessToken"], json!(SECRET));
    assert!(!format!("{s:?}").contains(SECRET));
    c.update_secret(&slack.id, SecretData::new(json!({"accessToken": "rotated"}))).await.unwrap();
    assert_eq!(c.decrypt_secret(&slack.id).await.unwrap().expose()["accessToken"], json!("rotated"));

    // Listing: access, filters, scopes, previews, paging.
    let mine = c.list(&alice, &CredentialQuery::default()).await.unwrap();
    assert_eq!(mine.total, 3);
    let slack_row = mine.data.iter().find(|r| r.id == slack.id).unwrap();
    assert_eq!(slack_row.description.as_ref().unwrap().chars().count(), 256);
    assert!(slack_row.scopes.contains(&"credential:update".to_owned()));
    assert_eq!(slack_row.home_project.as_ref().map(|p| p.id.clone()), Some(home.id.clone()));
    let bobs = c.list(&bob, &CredentialQuery::default()).await.unwrap();
    let ids: Vec<_> = bobs.data.iter().map(|r| r.id.clone()).collect();
    assert!(ids.contains(&slack.id) && ids.contains(&notion.id) && ids.contains(&global.id), "{ids:?}");
    assert_eq!(bobs.data.iter().find(|r| r.id == slack.id).unwrap().scopes, vec!["credential:read".to_owned()]);
    let shared = c.list(&bob, &CredentialQuery { only_shared_with_me: true, ..Default::default() }).await.unwrap();
    assert_eq!(shared.data.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), vec![slack.id.clone()]);
    let by_type = c.list(&alice, &CredentialQuery { kind: Some("NOTION".into()), ..Default::default() }).await.unwrap();
    assert_eq!(by_type.data.len(), 1);
    let by_name = c.list(&alice, &CredentialQuery { name: Some("gate".into()), ..Default::default() }).await.unwrap();
    assert_eq!(by_name.data[0].id, global.id);
    assert!(by_name.data[0].is_global && by_name.data[0].is_managed);
    let by_project =
        c.list(&alice, &CredentialQuery { project_id: Some(team.id.clone()), ..Default::default() }).await.unwrap();
    assert_eq!(by_project.data.len(), 1);
    let paged = c.list(&alice, &CredentialQuery { limit: Some(2), ..Default::default() }).await.unwrap();
    assert!(paged.has_more && paged.data.len() == 2);
    let rest = c.list(&alice, &CredentialQuery { limit: Some(2), offset: 2, ..Default::default() }).await.unwrap();
    assert!(!rest.has_more && rest.data.len() == 1);
    let (stranger, _) = data_support::user(&data, "mallory").await;
    assert!(c.get_for(&stranger, &notion.id).await.unwrap().is_none());
    assert_eq!(c.list(&stranger, &CredentialQuery::default()).await.unwrap().total, 1, "only the global one");

    c.delete(&slack.id).await.unwrap();
    assert!(c.get(&slack.id).await.unwrap().is_none());
    assert!(c.decrypt_secret(&slack.id).await.is_err());
}

#[tokio::test]
async fn a_different_key_cannot_decrypt() {
    let (env, data) = data_support::data().await;
    let (_alice, home) = data_support::user(&data, "alice").await;
    let cred = data
        .credentials
        .create(NewCredential {
            name: "x".into(),
            kind: "httpHeaderAuth".into(),
            description: None,
            project_id: home.id.clone(),
            is_managed: false,
            is_global: false,
            secret: secret(),
        })
        .await
        .unwrap();
    let other: Arc<dyn KeyProvider> = Arc::new(LocalKeyProvider::new([9u8; 32]));
    let wrong = InstanceData::with_keys(&env.clients, &env.config, other).unwrap();
    assert!(wrong.credentials.decrypt_secret(&cred.id).await.is_err());
}

#[tokio::test]
async fn kms_envelope_against_moto() {
    let (env, _) = data_support::data().await;
    let kms = aws_sdk_kms::Client::new(&store::aws::sdk_config(&env.config));
    let key = kms.create_key().description("instance-ai test").send().await.unwrap();
    let key_id = key.key_metadata().map(|m| m.key_id().to_owned()).unwrap();
    let provider: Arc<dyn KeyProvider> = Arc::new(KmsKeyProvider::new(kms, key_id));
    let data = InstanceData::with_keys(&env.clients, &env.config, provider).unwrap();
    let (_alice, home) = data_support::user(&data, "alice").await;
    let cred = data
        .credentials
        .create(NewCredential {
            name: "kms".into(),
            kind: "slackApi".into(),
            description: None,
            project_id: home.id.clone(),
            is_managed: false,
            is_global: false,
            secret: secret(),
        })
        .await
        .unwrap();
    assert_eq!(data.credentials.decrypt_secret(&cred.id).await.unwrap().expose()["accessToken"], json!(SECRET));
    // The local provider cannot open a KMS-wrapped key.
    let local = InstanceData::new(&env.clients, &env.config).unwrap();
    assert!(local.credentials.decrypt_secret(&cred.id).await.is_err());
}
