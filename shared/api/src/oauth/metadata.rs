//! Discovery documents: protected resource metadata for `/mcp` (RFC 9728,
//! at the path-suffixed and the root well-known URL) and the authorization
//! server's metadata (RFC 8414). Both name `origin`, the URL clients
//! reached us at (or `INSTANCE_AI_PUBLIC_URL`).

use mcp_server::scopes::Scopes;
use mcp_server::transport::resource_url;
use serde_json::{json, Value};

pub fn protected_resource(origin: &str) -> Value {
    json!({
        "resource": resource_url(origin),
        "authorization_servers": [origin],
        "scopes_supported": scopes(),
        "bearer_methods_supported": ["header"],
        "resource_name": "Instance AI MCP server",
    })
}

pub fn authorization_server(origin: &str) -> Value {
    let auth_methods = ["none", "client_secret_basic", "client_secret_post"];
    json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "revocation_endpoint": format!("{origin}/revoke"),
        "scopes_supported": scopes(),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": auth_methods,
        "revocation_endpoint_auth_methods_supported": auth_methods,
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": false,
    })
}

fn scopes() -> Vec<String> {
    Scopes::all().iter().map(|s| s.as_str().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_point_at_each_other() {
        let prm = protected_resource("https://mcp.example.com");
        assert_eq!(prm["resource"], "https://mcp.example.com/mcp");
        assert_eq!(prm["authorization_servers"][0], "https://mcp.example.com");
        let asm = authorization_server("https://mcp.example.com");
        assert_eq!(asm["issuer"], prm["authorization_servers"][0]);
        assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(asm["scopes_supported"], prm["scopes_supported"]);
    }
}
