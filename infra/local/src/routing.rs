//! Route matching with API Gateway's path syntax (`/chat/{threadId}`).

use std::collections::HashMap;
use store::deployment::{Edge, RouteDef, ROUTES};

/// What a request path matched.
pub enum RouteMatch {
    Found { route: &'static RouteDef, params: HashMap<String, String> },
    /// The path exists but not for this method.
    WrongMethod,
    NotFound,
}

/// Matches `method path` against the deployment's routes. Path parameters
/// are percent-decoded, as API Gateway passes them.
pub fn match_route(method: &str, path: &str) -> RouteMatch {
    let mut path_matched = false;
    for route in ROUTES {
        if let Some(params) = match_path(route.path, path) {
            // A Function URL has no routes: every method reaches the
            // function (a CORS preflight too), which answers for itself.
            if route.method.matches(method) || route.edge == Edge::StreamingUrl {
                return RouteMatch::Found { route, params };
            }
            path_matched = true;
        }
    }
    if path_matched {
        RouteMatch::WrongMethod
    } else {
        RouteMatch::NotFound
    }
}

fn match_path(pattern: &str, path: &str) -> Option<HashMap<String, String>> {
    let mut params = HashMap::new();
    let mut pat = pattern.trim_matches('/').split('/');
    let mut actual = path.trim_end_matches('/').trim_start_matches('/').split('/');
    loop {
        match (pat.next(), actual.next()) {
            (None, None) => return Some(params),
            (Some(p), Some(a)) => {
                if let Some(name) = p.strip_prefix('{').and_then(|p| p.strip_suffix("+}")) {
                    // Greedy: the rest of the path (handlers read the raw path).
                    let rest: Vec<&str> = std::iter::once(a).chain(actual.by_ref()).collect();
                    let rest = rest.join("/");
                    if rest.is_empty() {
                        return None;
                    }
                    params.insert(name.to_owned(), rest);
                    return Some(params);
                } else if let Some(name) = p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    if a.is_empty() {
                        return None;
                    }
                    let value = percent_encoding::percent_decode_str(a).decode_utf8().ok()?;
                    params.insert(name.to_owned(), value.into_owned());
                } else if p != a {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

/// Decoded `k=v` pairs of a query string.
pub fn url_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    percent_encoding::percent_decode_str(&s).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_parameters_and_methods() {
        match match_route("POST", "/instance-ai/chat/t%201") {
            RouteMatch::Found { route, params } => {
                assert_eq!(route.path, "/instance-ai/chat/{threadId}");
                assert_eq!(params["threadId"], "t 1");
            }
            _ => panic!("no match"),
        }
        match match_route("POST", "/instance-ai/chat/t1/cancel") {
            RouteMatch::Found { route, .. } => assert_eq!(route.path, "/instance-ai/chat/{threadId}/cancel"),
            _ => panic!("no match"),
        }
        assert!(matches!(match_route("DELETE", "/healthz"), RouteMatch::WrongMethod));
        assert!(matches!(match_route("GET", "/nope"), RouteMatch::NotFound));
        assert!(matches!(match_route("POST", "/instance-ai/chat/"), RouteMatch::NotFound));
        match match_route("DELETE", "/webhook/a/b%20c/") {
            RouteMatch::Found { route, params } => {
                assert_eq!(route.path, "/webhook/{proxy+}");
                assert_eq!(params["proxy"], "a/b%20c");
            }
            _ => panic!("no match"),
        }
        assert!(matches!(match_route("GET", "/webhook/"), RouteMatch::NotFound));
    }
}
