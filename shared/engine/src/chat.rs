//! The Chat Trigger (`@n8n/n8n-nodes-langchain.chatTrigger`, versions
//! 1–1.4): its settings as n8n reads them in a webhook call, and the item a
//! chat message becomes. The chat widget protocol (`@n8n/chat`): a JSON POST
//! `{action: "sendMessage" | "loadPreviousSession", sessionId, chatInput,
//! metadata?}` (multipart when files are attached) to `<webhookId>/chat`;
//! a GET of that URL serves the hosted chat page (mode `hostedChat`).

use serde_json::{json, Map, Value};

use crate::data::Item;
use crate::webhook::{IncomingRequest, RequestBody};
use crate::workflow::Node;

pub const CHAT_TRIGGER_TYPE: &str = "@n8n/n8n-nodes-langchain.chatTrigger";

/// The path segment after the node's webhook id (n8n's `CHAT_TRIGGER_PATH_IDENTIFIER`).
pub const CHAT_PATH: &str = "chat";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatMode {
    /// A page served at the chat URL (`hostedChat`).
    Hosted,
    /// A widget embedded elsewhere, or any client calling the URL (`webhook`).
    Embedded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatAuth {
    None,
    /// `basicAuth` with an `httpBasicAuth` credential.
    Basic,
    /// `n8nUserAuth`: a signed-in user of this instance (here: an API key).
    InstanceUser,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatResponseMode {
    LastNode,
    /// A Respond to Webhook node answers (1.0–1.2, and the embedded mode).
    ResponseNode,
    Streaming,
    /// Respond to Chat nodes (1.3+): not on this instance.
    ResponseNodes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadPreviousSession {
    /// `notSupported`: an empty list.
    Off,
    /// From the memory sub-node connected to the trigger.
    Memory,
    /// The workflow answers the `loadPreviousSession` action itself.
    Manually,
}

/// The hosted page's texts and switches.
#[derive(Debug, Clone, PartialEq)]
pub struct PageOptions {
    pub title: String,
    pub subtitle: String,
    pub input_placeholder: String,
    pub get_started: String,
    pub show_welcome_screen: bool,
    pub custom_css: Option<String>,
    pub allow_file_uploads: bool,
    pub allowed_mime_types: String,
    pub initial_messages: Vec<String>,
}

/// A Chat Trigger's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatSpec {
    pub public: bool,
    pub mode: ChatMode,
    pub auth: ChatAuth,
    pub response_mode: ChatResponseMode,
    pub load_previous: LoadPreviousSession,
    // `allowedOrigins` (CORS) is read where every webhook path's CORS is:
    // `webhook::allowed_origins`.
    pub page: PageOptions,
}

/// A parameter's text: fixed values as written (an `=` prefix without an
/// expression is dropped, as n8n's editor writes fixed values in expression mode).
fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(match s.strip_prefix('=') {
            Some(rest) if !rest.contains("{{") => rest.to_owned(),
            _ => s.clone(),
        }),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn flag(v: Option<&Value>) -> Option<bool> {
    match v? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => Some(s == "true"),
        _ => None,
    }
}

impl ChatSpec {
    /// The node's settings with n8n's defaults (the options that show for
    /// its version and mode); an unknown value is an error naming it.
    pub fn of(node: &Node) -> Result<ChatSpec, String> {
        let p = &node.parameters;
        let opt = |k: &str| p.get("options").and_then(|o| o.get(k));
        let public = flag(p.get("public")).unwrap_or(false);
        let mode = match text(p.get("mode")).as_deref().unwrap_or("hostedChat") {
            "hostedChat" => ChatMode::Hosted,
            "webhook" => ChatMode::Embedded,
            other => return Err(format!("Chat Trigger \"{}\": unknown mode \"{other}\"", node.name)),
        };
        let auth = match text(p.get("authentication")).as_deref().unwrap_or("none") {
            "none" => ChatAuth::None,
            "basicAuth" => ChatAuth::Basic,
            "n8nUserAuth" => ChatAuth::InstanceUser,
            other => return Err(format!("Chat Trigger \"{}\": unknown authentication \"{other}\"", node.name)),
        };
        let available_in_chat = flag(p.get("availableInChat")).unwrap_or(false);
        let response_mode = match text(opt("responseMode")).as_deref() {
            None if available_in_chat => ChatResponseMode::Streaming,
            None | Some("lastNode") => ChatResponseMode::LastNode,
            Some("responseNode") => ChatResponseMode::ResponseNode,
            Some("streaming") => ChatResponseMode::Streaming,
            Some("responseNodes") => ChatResponseMode::ResponseNodes,
            Some(other) => return Err(format!("Chat Trigger \"{}\": unknown response mode \"{other}\"", node.name)),
        };
        let load_previous = match text(opt("loadPreviousSession")).as_deref().unwrap_or("notSupported") {
            "notSupported" => LoadPreviousSession::Off,
            "memory" => LoadPreviousSession::Memory,
            "manually" => LoadPreviousSession::Manually,
            other => return Err(format!("Chat Trigger \"{}\": unknown loadPreviousSession \"{other}\"", node.name)),
        };
        let initial = text(p.get("initialMessages")).unwrap_or_else(|| "Hi there! 👋\nMy name is Nathan. How can I assist you today?".into());
        Ok(ChatSpec {
            public,
            mode,
            auth,
            response_mode,
            load_previous,
            page: PageOptions {
                title: text(opt("title")).unwrap_or_else(|| "Hi there! 👋".into()),
                subtitle: text(opt("subtitle")).unwrap_or_else(|| "Start a chat. We're here to help you 24/7.".into()),
                input_placeholder: text(opt("inputPlaceholder")).unwrap_or_else(|| "Type your question..".into()),
                get_started: text(opt("getStarted")).unwrap_or_else(|| "New Conversation".into()),
                show_welcome_screen: flag(opt("showWelcomeScreen")).unwrap_or(false),
                custom_css: text(opt("customCss")).filter(|c| !c.trim().is_empty()),
                allow_file_uploads: flag(opt("allowFileUploads")).unwrap_or(false),
                allowed_mime_types: text(opt("allowedFilesMimeTypes")).unwrap_or_else(|| "*".into()),
                initial_messages: initial.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect(),
            },
        })
    }
}

/// The body's JSON (`{}` when there is none).
pub fn body_json(req: &IncomingRequest) -> Value {
    match &req.body {
        RequestBody::Parsed(v) => v.clone(),
        RequestBody::Multipart { fields, .. } => Value::Object(fields.clone()),
        _ => json!({}),
    }
}

/// The item a chat message starts the workflow with: the body as sent (n8n:
/// `{json: bodyData}`); a multipart message's fields, with each file in
/// `binary.data<n>` and described in `files`.
pub fn message_item(req: &IncomingRequest) -> Item {
    match &req.body {
        RequestBody::Multipart { fields, files } if !files.is_empty() => {
            let mut json = fields.clone();
            let mut binary = Map::new();
            let mut described = vec![];
            for (i, f) in files.iter().enumerate() {
                let key = format!("data{i}");
                let data = crate::webhook::binary_data(&f.data, f.file_name.as_deref(), &f.mime_type);
                let mut info = Map::new();
                for k in ["fileName", "fileSize", "fileType", "mimeType", "fileExtension"] {
                    if let Some(v) = data.get(k) {
                        info.insert(k.to_owned(), v.clone());
                    }
                }
                info.insert("binaryKey".into(), json!(key));
                described.push(Value::Object(info));
                binary.insert(key, data);
            }
            json.insert("files".into(), Value::Array(described));
            let mut item = Item::new(Value::Object(json));
            item.binary = Some(Value::Object(binary).into());
            item
        }
        _ => Item::new(body_json(req)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(params: Value, version: f64) -> Node {
        serde_json::from_value(json!({"name": "Chat", "type": CHAT_TRIGGER_TYPE, "typeVersion": version, "parameters": params})).unwrap()
    }

    #[test]
    fn defaults_and_options() {
        let s = ChatSpec::of(&node(json!({}), 1.1)).unwrap();
        assert!(!s.public);
        assert_eq!((s.mode, s.auth, s.response_mode, s.load_previous), (ChatMode::Hosted, ChatAuth::None, ChatResponseMode::LastNode, LoadPreviousSession::Off));
        assert_eq!(s.page.initial_messages, vec!["Hi there! 👋", "My name is Nathan. How can I assist you today?"]);
        let s = ChatSpec::of(&node(
            json!({"public": true, "mode": "webhook", "authentication": "basicAuth", "options": {"responseMode": "streaming", "loadPreviousSession": "memory", "allowedOrigins": "https://a.example, https://b.example", "title": "=Support"}}),
            1.3,
        ))
        .unwrap();
        assert_eq!((s.mode, s.auth, s.response_mode, s.load_previous), (ChatMode::Embedded, ChatAuth::Basic, ChatResponseMode::Streaming, LoadPreviousSession::Memory));
        assert_eq!(s.page.title, "Support");
        // availableInChat streams by default
        assert_eq!(ChatSpec::of(&node(json!({"availableInChat": true}), 1.2)).unwrap().response_mode, ChatResponseMode::Streaming);
        assert!(ChatSpec::of(&node(json!({"authentication": "oauth"}), 1.1)).unwrap_err().contains("oauth"));
    }
}
