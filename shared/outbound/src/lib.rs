//! Outbound HTTP under one SSRF guard.
//!
//! [`guard`] holds the rules (which addresses and hosts a request may reach);
//! the engine's HTTP Request node and [`Client`], the async client of the
//! agent's tools, both enforce them: on the URL as written, on every address
//! actually connected to (the resolver refuses forbidden ones, so a DNS
//! answer cannot rebind past the check) and on every redirect target.

pub mod guard;
mod client;

pub use client::{Client, Exchange, FetchError, Request, Response, Streaming};
pub use guard::{is_forbidden_ip, GuardedResolver, Policy, Refusal, Resolver, SystemResolver};
