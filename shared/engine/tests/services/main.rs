//! Service nodes on the declarative runtime, each against a local server
//! that speaks the service's documented API: every operation's request
//! (method, path, query, auth header, body) asserted, and the items its
//! answer becomes as n8n's node returns them.

mod support;

mod discord;
mod slack;
mod telegram;
