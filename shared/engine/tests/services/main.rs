//! Service nodes on the declarative runtime, each against a local server
//! that speaks the service's documented API: every operation's request
//! (method, path, query, auth header, body) asserted, and the items its
//! answer becomes as n8n's node returns them.

mod google;
mod support;

mod airtable;
mod discord;
mod github;
mod gmail;
mod google_auth;
mod google_drive;
mod google_sheets;
mod slack;
mod telegram;

#[test]
fn the_services_are_in_the_catalog_searchable_by_name_and_alias() {
    for (query, node) in [("slack", "n8n-nodes-base.slack"), ("telegram", "n8n-nodes-base.telegram"), ("discord", "n8n-nodes-base.discord"), ("github", "n8n-nodes-base.github"), ("airtable", "n8n-nodes-base.airtable")] {
        assert_eq!(engine::catalog::search(query, 3)[0].name, node);
        assert!(engine::catalog::describe_exact(node).unwrap().is_declarative());
        assert!(engine::nodes::get(node).is_some(), "{node} runs");
    }
    for (query, node) in [("google sheets", "n8n-nodes-base.googleSheets"), ("gmail", "n8n-nodes-base.gmail"), ("google drive", "n8n-nodes-base.googleDrive"), ("spreadsheet", "n8n-nodes-base.googleSheets")] {
        assert_eq!(engine::catalog::search(query, 3)[0].name, node, "{query}");
        assert!(engine::catalog::describe_exact(node).unwrap().is_declarative());
    }
    let chat: Vec<String> = engine::catalog::search("chat message", 20).into_iter().map(|s| s.name).collect();
    for node in ["n8n-nodes-base.slack", "n8n-nodes-base.telegram", "n8n-nodes-base.discord"] {
        assert!(chat.contains(&node.to_owned()), "{node} by its aliases: {chat:?}");
    }
}
