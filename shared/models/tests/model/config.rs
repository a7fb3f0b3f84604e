use models::{provider_from_config_with_env, ModelErrorKind, MODEL_ENV};

#[tokio::test]
async fn no_model_names_the_setting() {
    for model in [None, Some(""), Some("   ")] {
        let error = provider_from_config_with_env(model, |_| None)
            .await
            .err()
            .expect("error");
        assert_eq!(error.kind, ModelErrorKind::Config);
        assert!(error.message.contains(MODEL_ENV), "{error}");
    }
}

#[tokio::test]
async fn unknown_provider_and_missing_keys_are_clear() {
    let error = provider_from_config_with_env(Some("gemini:pro"), |_| None)
        .await
        .err()
        .expect("error");
    assert!(
        error.message.contains("unknown provider \"gemini\""),
        "{error}"
    );

    let error = provider_from_config_with_env(Some("anthropic:claude-sonnet-4-5"), |_| None)
        .await
        .err()
        .expect("error");
    assert!(error.message.contains("ANTHROPIC_API_KEY"), "{error}");

    let error = provider_from_config_with_env(Some("openai:gpt-4.1"), |_| None)
        .await
        .err()
        .expect("error");
    assert!(error.message.contains("OPENAI_API_KEY"), "{error}");

    let env = |k: &str| match k {
        "ANTHROPIC_API_KEY" => Some("k".to_string()),
        "ANTHROPIC_MAX_TOKENS" => Some("lots".to_string()),
        _ => None,
    };
    let error = provider_from_config_with_env(Some("anthropic:claude"), env)
        .await
        .err()
        .expect("error");
    assert!(error.message.contains("ANTHROPIC_MAX_TOKENS"), "{error}");
}

#[tokio::test]
async fn keys_and_base_urls_from_env() {
    let env = |k: &str| match k {
        "ANTHROPIC_API_KEY" => Some("k".to_string()),
        "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:9".to_string()),
        "OPENAI_API_KEY" => Some("k".to_string()),
        _ => None,
    };
    let p = provider_from_config_with_env(Some("anthropic:claude-sonnet-4-5"), env)
        .await
        .expect("anthropic");
    assert_eq!(
        (p.provider(), p.model()),
        ("anthropic", "claude-sonnet-4-5")
    );
    let p = provider_from_config_with_env(Some("openai:gpt-4.1"), env)
        .await
        .expect("openai");
    assert_eq!((p.provider(), p.model()), ("openai", "gpt-4.1"));
}
