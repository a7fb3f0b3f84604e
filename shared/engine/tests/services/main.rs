//! Service nodes on the declarative runtime, each against a local server
//! that speaks the service's documented API: every operation's request
//! (method, path, query, auth header, body) asserted, and the items its
//! answer becomes as n8n's node returns them.

mod google;
mod support;

mod airtable;
mod discord;
mod email;
mod sql;
mod github;
mod gmail;
mod google_auth;
mod google_drive;
mod google_sheets;
mod hubspot;
mod jira;
mod notion;
mod openai;
mod slack;
mod slack_more;
mod stripe;
mod telegram;

#[test]
fn the_services_are_in_the_catalog_searchable_by_name_and_alias() {
    for (query, node) in [
        ("slack", "n8n-nodes-base.slack"),
        ("telegram", "n8n-nodes-base.telegram"),
        ("discord", "n8n-nodes-base.discord"),
        ("github", "n8n-nodes-base.github"),
        ("airtable", "n8n-nodes-base.airtable"),
        ("notion", "n8n-nodes-base.notion"),
        ("jira", "n8n-nodes-base.jira"),
        ("hubspot", "n8n-nodes-base.hubspot"),
        ("stripe", "n8n-nodes-base.stripe"),
        ("openai", "n8n-nodes-base.openAi"),
    ] {
        assert_eq!(engine::catalog::search(query, 3).first().map(|s| s.name.as_str()), Some(node), "{query}");
        assert!(engine::catalog::describe_exact(node).unwrap().is_declarative());
        assert!(engine::nodes::get(node).is_some(), "{node} runs");
    }
    // by what people ask for rather than the product's name
    for (query, node) in [("crm deal", "n8n-nodes-base.hubspot"), ("payment customer", "n8n-nodes-base.stripe"), ("ticket issue", "n8n-nodes-base.jira"), ("wiki page", "n8n-nodes-base.notion"), ("chatgpt", "n8n-nodes-base.openAi")] {
        let hits: Vec<String> = engine::catalog::search(query, 5).into_iter().map(|s| s.name).collect();
        assert!(hits.contains(&node.to_owned()), "{query}: {hits:?}");
    }
    // "spreadsheet" finds Google Sheets among the first (beside the Spreadsheet File node)
    let hits: Vec<String> = engine::catalog::search("spreadsheet", 3).into_iter().map(|s| s.name).collect();
    assert!(hits.contains(&"n8n-nodes-base.googleSheets".to_owned()), "{hits:?}");
    for (query, node) in [("google sheets", "n8n-nodes-base.googleSheets"), ("gmail", "n8n-nodes-base.gmail"), ("google drive", "n8n-nodes-base.googleDrive")] {
        assert_eq!(engine::catalog::search(query, 3)[0].name, node, "{query}");
        assert!(engine::catalog::describe_exact(node).unwrap().is_declarative());
    }
    let chat: Vec<String> = engine::catalog::search("chat message", 20).into_iter().map(|s| s.name).collect();
    for node in ["n8n-nodes-base.slack", "n8n-nodes-base.telegram", "n8n-nodes-base.discord"] {
        assert!(chat.contains(&node.to_owned()), "{node} by its aliases: {chat:?}");
    }
}
