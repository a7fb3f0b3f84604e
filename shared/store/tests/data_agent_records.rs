//! The agent's thread-level records against moto: saved preferences,
//! the conversation index.

mod data_support;

use protocol::ids::ThreadId;
use protocol::UserId;
use store::data::agent_records::{
    ConversationMessage, PreferenceRejection, SavePreference, UserAnswer, AI_PREFERENCE_CONTENT_MAX_LENGTH,
    MAX_PREFERENCES,
};

fn rejected(r: &SavePreference) -> Option<PreferenceRejection> {
    match r {
        SavePreference::Rejected { reason, .. } => Some(*reason),
        SavePreference::Saved { .. } => None,
    }
}

#[tokio::test]
async fn preferences_refuse_long_duplicate_and_overflow() {
    let (_env, data) = data_support::data().await;
    let a = &data.agent;
    let user = UserId("pref-user".into());
    let saved = a.save_preference(&user, "Always answer in German").await.unwrap();
    let SavePreference::Saved { ok: true, preference } = &saved else { panic!("{saved:?}") };
    assert_eq!(preference.scope, "user");
    let json = serde_json::to_value(&saved).unwrap();
    assert_eq!(json["ok"], true);

    let long = "x".repeat(AI_PREFERENCE_CONTENT_MAX_LENGTH + 1);
    let r = a.save_preference(&user, &long).await.unwrap();
    assert_eq!(rejected(&r), Some(PreferenceRejection::TooLong));
    assert_eq!(serde_json::to_value(&r).unwrap()["reason"], "too_long");
    let r = a.save_preference(&user, "  always answer in   GERMAN ").await.unwrap();
    assert_eq!(rejected(&r), Some(PreferenceRejection::Duplicate));
    assert_eq!(a.preferences(&user).await.unwrap().len(), 1, "refusals write nothing");

    for i in 1..MAX_PREFERENCES {
        assert_eq!(rejected(&a.save_preference(&user, &format!("preference number {i}")).await.unwrap()), None);
    }
    let r = a.save_preference(&user, "one too many").await.unwrap();
    assert_eq!(rejected(&r), Some(PreferenceRejection::ScopeFull));
    assert_eq!(a.preferences(&user).await.unwrap().len() as u64, MAX_PREFERENCES);

    // Undo frees the slot and the content.
    a.delete_preference(&user, &preference.id).await.unwrap();
    assert_eq!(rejected(&a.save_preference(&user, "Always answer in German").await.unwrap()), None);
    // Another user's preferences are separate.
    assert_eq!(rejected(&a.save_preference(&UserId("other".into()), "one too many").await.unwrap()), None);
}

#[tokio::test]
async fn an_edit_keeps_the_rules_of_a_save_and_strangers_find_nothing() {
    let (_env, data) = data_support::data().await;
    let a = &data.agent;
    let user = UserId("edit-user".into());
    let SavePreference::Saved { preference: first, .. } = a.save_preference(&user, "Use Slack for alerts").await.unwrap() else { panic!() };
    let SavePreference::Saved { preference: second, .. } = a.save_preference(&user, "Name workflows in English").await.unwrap() else { panic!() };
    let r = a.update_preference(&user, &first.id, "Use Microsoft Teams for alerts").await.unwrap();
    let SavePreference::Saved { preference: edited, .. } = &r else { panic!("{r:?}") };
    assert_eq!((edited.id.as_str(), edited.content.as_str(), edited.created_at.as_str()), (first.id.as_str(), "Use Microsoft Teams for alerts", first.created_at.as_str()));
    // The old text is free again; the other preference's text is taken.
    assert_eq!(rejected(&a.save_preference(&user, "use slack for alerts").await.unwrap()), None);
    assert_eq!(rejected(&a.update_preference(&user, &first.id, "name workflows in english").await.unwrap()), Some(PreferenceRejection::Duplicate));
    assert_eq!(rejected(&a.update_preference(&user, &second.id, &"y".repeat(AI_PREFERENCE_CONTENT_MAX_LENGTH + 1)).await.unwrap()), Some(PreferenceRejection::TooLong));
    let contents: Vec<String> = a.preferences(&user).await.unwrap().into_iter().map(|p| p.content).collect();
    assert_eq!(contents, ["Use Microsoft Teams for alerts", "Name workflows in English", "use slack for alerts"]);
    let stranger = UserId("stranger".into());
    assert!(matches!(a.update_preference(&stranger, &first.id, "mine now").await, Err(store::StoreError::NotFound(_))));
    assert!(matches!(a.delete_preference(&stranger, &first.id).await, Err(store::StoreError::NotFound(_))));
}

fn msg(id: &str, role: &str, at: &str, text: &str) -> ConversationMessage {
    ConversationMessage {
        message_id: id.into(),
        role: role.into(),
        created_at: at.into(),
        text: text.into(),
        user_answers: Vec::new(),
    }
}

#[tokio::test]
async fn conversation_history_search_and_windows() {
    let (_env, data) = data_support::data().await;
    let a = &data.agent;
    let (u, p) = (UserId("hist-user".into()), "proj1");
    let (t1, t2, t3) = (ThreadId("t1".into()), ThreadId("t2".into()), ThreadId("t3".into()));
    a.index_thread(&u, p, &t1, "Slack alerts for invoices").await.unwrap();
    a.index_message(
        &u,
        p,
        &t1,
        &msg("m1", "user", "2025-01-01T00:00:01.000Z", "Send a Slack message when an invoice is overdue"),
    )
    .await
    .unwrap();
    a.index_message(
        &u,
        p,
        &t1,
        &msg("m2", "assistant", "2025-01-01T00:00:02.000Z", "Done: the workflow posts to #finance"),
    )
    .await
    .unwrap();
    a.index_thread(&u, p, &t2, "CRM cleanup").await.unwrap();
    let mut asked = msg("m3", "assistant", "2025-01-02T00:00:01.000Z", "Which CRM?");
    asked.user_answers = vec![UserAnswer { question: "Which CRM do you use?".into(), answer: "HubSpot".into() }];
    a.index_message(&u, p, &t2, &asked).await.unwrap();
    for i in 0..8 {
        a.index_message(
            &u,
            p,
            &t2,
            &msg(&format!("n{i}"), "user", &format!("2025-01-02T00:01:0{i}.000Z"), &format!("step {i}")),
        )
        .await
        .unwrap();
    }
    a.index_thread(&u, p, &t3, "Empty thread").await.unwrap();

    let hits = a.search_conversations(&u, p, Some("slack"), None, None).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].thread_id, t1);
    assert_eq!(hits[0].matched_in, ["title", "messages"]);
    assert_eq!(hits[0].excerpts[0].message_id, "m1");
    // Assistant answers are not searched; ask-user answers are.
    assert!(a.search_conversations(&u, p, Some("#finance"), None, None).await.unwrap().is_empty());
    let hub = a.search_conversations(&u, p, Some("hubspot"), None, None).await.unwrap();
    assert_eq!(hub[0].matched_in, ["user-answers"]);
    // The current thread is excluded; empty threads never show; recency listing.
    assert!(a.search_conversations(&u, p, Some("slack"), None, Some(&t1)).await.unwrap().is_empty());
    let recent = a.search_conversations(&u, p, None, None, None).await.unwrap();
    assert_eq!(recent.iter().map(|h| h.thread_id.clone()).collect::<Vec<_>>(), [t2.clone(), t1.clone()]);
    assert!(a.search_conversations(&u, p, Some("x"), None, None).await.is_err(), "2–200 characters");
    assert!(a.search_conversations(&UserId("stranger".into()), p, Some("slack"), None, None).await.unwrap().is_empty());

    let tail = a.get_messages(&u, p, &t2, None, Some(3), None).await.unwrap();
    assert_eq!(tail.messages.iter().map(|m| m.message_id.as_str()).collect::<Vec<_>>(), ["n5", "n6", "n7"]);
    assert!(tail.has_more_before && !tail.has_more_after);
    let around = a.get_messages(&u, p, &t2, Some("n3"), Some(1), Some(1)).await.unwrap();
    assert_eq!(around.messages.iter().map(|m| m.message_id.as_str()).collect::<Vec<_>>(), ["n2", "n3", "n4"]);
    assert!(a.get_messages(&u, p, &t2, None, Some(1), Some(1)).await.is_err());
    assert!(a.get_messages(&UserId("stranger".into()), p, &t2, None, None, None).await.is_err());
}
