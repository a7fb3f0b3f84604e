"""The MCP authorization flow through the official MCP Python SDK's OAuth
client (`OAuthClientProvider`): it discovers the server from the 401,
registers, sends the person to the consent page, exchanges the code, calls
tools, refreshes, and is refused after revocation. The person is played by
plain HTTP form posts (GET the page, sign in with an API key, Approve or
untick scopes), as a browser without JavaScript would.

Run by tests/tests/mcp_oauth.rs with MCP_URL, OTHER_MCP_URL (another
instance sharing the store: its tokens must not work here, nor ours there)
and MCP_KEY (the person's API key) set; prints one JSON summary line last.
"""
import asyncio
import json
import os
import time
from collections import Counter
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urlparse

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

URL = os.environ["MCP_URL"]
OTHER_URL = os.environ["OTHER_MCP_URL"]
KEY = os.environ["MCP_KEY"]
BASE = f"{urlparse(URL).scheme}://{urlparse(URL).netloc}"
REDIRECT = "http://127.0.0.1:33418/callback"  # never listened on: the person's "browser" reads the Location

READ_TOOLS = {
    "search_workflows", "get_workflow_details", "prepare_test_pin_data", "search_projects", "search_folders",
    "get_execution", "search_executions", "list_credentials", "get_sdk_reference", "search_nodes", "get_node_types",
    "get_suggested_nodes", "validate_workflow", "search_data_tables",
}

checks = 0


def check(what, cond, detail=None):
    global checks
    if not cond:
        raise AssertionError(f"{what}: {json.dumps(detail, default=str)[:2000] if detail is not None else ''}")
    checks += 1
    print(f"ok - {what}", flush=True)


class MemoryStorage:
    def __init__(self):
        self.tokens = None
        self.client_info = None
        self.token_history = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        self.token_history.append(tokens)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, info):
        self.client_info = info


class Form(HTMLParser):
    """The consent form's fields, as a browser would submit them."""

    def __init__(self):
        super().__init__()
        self.fields = []  # (name, value) of hidden inputs
        self.scopes = []  # checkbox values
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("type") == "hidden":
            self.fields.append((a["name"], a.get("value", "")))
        if tag == "input" and a.get("type") == "checkbox" and a.get("name") == "scope_choice":
            self.scopes.append(a["value"])

    def handle_data(self, data):
        self.text.append(data)


class Person:
    """Someone at a browser: opens the authorization URL, signs in, decides."""

    def __init__(self, grant=None, deny=False, probe=False):
        self.grant = grant  # scopes to leave ticked (None: all offered)
        self.deny = deny
        self.probe = probe  # first try forged and wrong posts (not counted)
        self.result = None
        self.requests = 0
        self.pages = []

    async def open(self, url):
        check("the client sends the person to our /authorize", url.startswith(f"{BASE}/authorize?"), url)
        q = parse_qs(urlparse(url).query)
        check("the authorization request uses PKCE S256 and names our resource",
              q.get("code_challenge_method") == ["S256"] and q.get("resource") == [f"{BASE}/mcp"] and "state" in q, q)
        async with httpx2.AsyncClient() as browser:
            page = await browser.get(url)
            self.requests += 1
            check("the consent page opens", page.status_code == 200 and "text/html" in page.headers["content-type"], page.text)
            check("the consent page may not be framed", page.headers.get("x-frame-options") == "DENY")
            form = Form()
            form.feed(page.text)
            self.pages.append(" ".join(form.text))
            check("the consent page names the client and what it asks for",
                  "OAuth e2e" in page.text and set(form.scopes) <= {"mcp:read", "mcp:execute", "mcp:write"} and form.scopes, form.scopes)
            ticked = form.scopes if self.grant is None else [s for s in form.scopes if s in self.grant]
            body = form.fields + [("scope_choice", s) for s in ticked]
            headers = {"content-type": "application/x-www-form-urlencoded", "origin": BASE}

            if self.probe:
                await self.forgeries(browser, body, headers)
                self.probe = False

            decision = "deny" if self.deny else "approve"
            r = await browser.post(f"{BASE}/authorize", content=urlencode(body + [("api_key", KEY), ("decision", decision)]),
                                   headers=headers)
            self.requests += 1
            check("the decision sends the browser back to the client", r.status_code == 303 and r.headers["location"].startswith(REDIRECT), r.text)
            back = parse_qs(urlparse(r.headers["location"]).query)
            check("the redirect carries state and our issuer", back.get("state") == q["state"] and back.get("iss") == [BASE], back)
            self.result = back

    async def forgeries(self, browser, body, headers):
        """Posts the server must refuse: without the page's CSRF token, from another site, with a wrong key."""
        forged = [(k, v) for k, v in body if k != "csrf"] + [("csrf", "x" * 43), ("api_key", KEY), ("decision", "approve")]
        r = await browser.post(f"{BASE}/authorize", content=urlencode(forged), headers=headers)
        check("a consent post without the page's CSRF token is refused", r.status_code == 400 and "location" not in r.headers, r.text)
        r = await browser.post(f"{BASE}/authorize", content=urlencode(body + [("api_key", KEY), ("decision", "approve")]),
                               headers={**headers, "origin": "https://evil.example"})
        check("a consent post from another site is refused", r.status_code == 400 and "location" not in r.headers, r.text)
        r = await browser.post(f"{BASE}/authorize", content=urlencode(body + [("api_key", "not-a-key"), ("decision", "approve")]),
                               headers=headers)
        check("a wrong API key shows the page again", r.status_code == 401 and "not valid" in r.text, r.text)

    async def callback(self):
        back = self.result
        if "error" in back:
            raise PermissionError(f"the person answered {back['error'][0]}")
        return AuthorizationCodeResult(code=back["code"][0], state=back["state"][0], iss=back["iss"][0])


def provider(storage, person, scope=None):
    meta = OAuthClientMetadata(client_name="OAuth e2e", redirect_uris=[REDIRECT], scope=scope)
    return OAuthClientProvider(server_url=URL, client_metadata=meta, storage=storage,
                               redirect_handler=person.open, callback_handler=person.callback)


async def raw_call(url, token, name, args, headers=None):
    """A tools/call without the SDK, to read the HTTP answer itself."""
    async with httpx2.AsyncClient() as h:
        return await h.post(url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": args}},
                            headers={"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream",
                                     "mcp-protocol-version": "2025-06-18", **(headers or {})})


async def post_as_client(storage, path, data):
    info = storage.client_info
    async with httpx2.AsyncClient() as h:
        if info.token_endpoint_auth_method == "client_secret_basic":
            return await h.post(f"{BASE}{path}", data=data, auth=httpx2.BasicAuth(info.client_id, info.client_secret))
        return await h.post(f"{BASE}{path}", data={**data, "client_id": info.client_id})


async def main():
    summary = {}

    # 1. A first connection, counted: every request the client makes until
    #    the session is initialized, and the person's page loads and posts.
    storage, person = MemoryStorage(), Person(probe=True)
    sent = Counter()

    async def count(request):
        sent[f"{request.method} {request.url.path}"] += 1

    auth = provider(storage, person)
    http = httpx2.AsyncClient(auth=auth, event_hooks={"request": [count]}, timeout=httpx2.Timeout(30, read=300))
    async with Client(streamable_http_client(URL, http_client=http)) as c:
        first = dict(sent)
        summary["firstConnection"] = {"clientRequests": sum(first.values()), "byRoute": first,
                                      "personRequests": person.requests}
        check("the client registered itself", storage.client_info is not None and storage.client_info.client_id.startswith("mcpc_"))
        check("it discovered through the path-suffixed resource metadata and the authorization server metadata",
              first.get("GET /.well-known/oauth-protected-resource/mcp") == 1 and first.get("GET /.well-known/oauth-authorization-server") == 1, first)
        check("one code exchange", first.get("POST /token") == 1 and first.get("POST /register") == 1, first)
        tokens = storage.tokens
        check("an access and a refresh token, short-lived, with every scope",
              tokens.access_token.startswith("iaat_") and tokens.refresh_token and tokens.expires_in <= 900
              and set(tokens.scope.split()) == {"mcp:read", "mcp:execute", "mcp:write"}, tokens.model_dump())

        tools = {t.name for t in (await c.list_tools()).tools}
        check("all 27 tools are listed for a full grant", len(tools) == 27, sorted(tools))
        r = await c.call_tool("search_workflows", {})
        check("a read tool works", not r.is_error, r.content)
        r = await c.call_tool("search_projects", {"type": "personal"})
        pid = r.structured_content["data"][0]["id"]
        r = await c.call_tool("create_data_table", {"projectId": pid, "name": "oauth e2e", "columns": [{"name": "n", "type": "number"}]})
        check("a write tool works with the write scope", not r.is_error, r.content)
        summary["projectId"] = pid

        # 2. Refresh: the client finds its access token expired and refreshes it.
        old = storage.tokens
        auth.context.token_expiry_time = time.time() - 1
        before = sent["POST /token"]
        r = await c.call_tool("search_data_tables", {})
        check("after the refresh the call works", not r.is_error, r.content)
        check("the client refreshed at /token", sent["POST /token"] == before + 1, dict(sent))
        new = storage.tokens
        check("refresh rotates both tokens", new.access_token != old.access_token and new.refresh_token != old.refresh_token)
        r = await raw_call(URL, old.access_token, "search_workflows", {})
        check("the previous access token still works until it expires (tokens are short-lived)", r.status_code == 200, r.text)

    # 3. Audience: our token at another instance that shares the store, and
    #    a token request for another resource.
    r = await raw_call(OTHER_URL, new.access_token, "search_workflows", {})
    www = r.headers.get("www-authenticate", "")
    check("a token for this server is refused by another resource", r.status_code == 401 and 'error="invalid_token"' in www, [r.status_code, www, r.text])
    check("the refusal names the audience", f"{BASE}/mcp" in r.text, r.text)
    r = await raw_call(OTHER_URL, new.access_token, "search_workflows", {}, {"x-forwarded-host": urlparse(BASE).netloc})
    check("a forwarded-host header does not make the other instance take it", r.status_code == 401, r.text)
    r = await post_as_client(storage, "/token", {"grant_type": "refresh_token", "refresh_token": new.refresh_token, "resource": f"{OTHER_URL}"})
    check("a token for another resource is not issued", r.status_code == 400 and r.json()["error"] == "invalid_target", r.text)

    # 4. Revocation (RFC 7009): the refresh token ends the whole grant.
    r = await post_as_client(storage, "/revoke", {"token": new.refresh_token, "token_type_hint": "refresh_token"})
    check("revocation answers 200", r.status_code == 200, r.text)
    r = await raw_call(URL, new.access_token, "search_workflows", {})
    check("the access token is refused after revocation", r.status_code == 401 and "resource_metadata=" in r.headers.get("www-authenticate", ""), r.text)
    r = await post_as_client(storage, "/token", {"grant_type": "refresh_token", "refresh_token": new.refresh_token})
    check("the refresh token is refused after revocation", r.status_code == 400 and r.json()["error"] == "invalid_grant", r.text)
    # The SDK client itself: refused, it goes back to the person, who denies.
    person.deny = True
    auth.context.token_expiry_time = None
    refused = None
    try:
        async with Client(streamable_http_client(URL, http_client=http)) as c:
            await c.list_tools()
    except BaseException as e:  # the SDK wraps the callback's error in task groups
        refused = repr(e)
    check("the SDK client is refused after revocation (the person denies reconnecting)", refused is not None and "access_denied" in refused, refused)
    await http.aclose()

    # 5. A read-only grant: the person unticks execute and write.
    storage, person = MemoryStorage(), Person(grant={"mcp:read"})
    http = httpx2.AsyncClient(auth=provider(storage, person), timeout=httpx2.Timeout(30, read=300))
    async with Client(streamable_http_client(URL, http_client=http)) as c:
        check("the read grant carries only mcp:read", storage.tokens.scope == "mcp:read", storage.tokens.model_dump())
        tools = {t.name for t in (await c.list_tools()).tools}
        check("tools/list shows only the read tools", tools == READ_TOOLS, sorted(tools ^ READ_TOOLS))
        r = await c.call_tool("search_data_tables", {})
        check("a read tool works with the read scope", not r.is_error, r.content)
    r = await raw_call(URL, storage.tokens.access_token, "create_data_table",
                       {"projectId": summary["projectId"], "name": "made with a read token", "columns": [{"name": "n", "type": "number"}]})
    body = r.json()
    www = r.headers.get("www-authenticate", "")
    check("a write tool is refused for a read token with 403 insufficient_scope", r.status_code == 403 and 'error="insufficient_scope"' in www and "mcp:write" in www, [r.status_code, www])
    check("the refusal says which scope is missing", "mcp:write" in body["error"]["message"] and body["error"]["data"]["requiredScope"] == "mcp:write", body)
    await http.aclose()

    # 6. Reuse detection: a rotated refresh token presented again revokes the grant.
    storage, person = MemoryStorage(), Person()
    http = httpx2.AsyncClient(auth=provider(storage, person), timeout=httpx2.Timeout(30, read=300))
    async with Client(streamable_http_client(URL, http_client=http)) as c:
        await c.list_tools()
    first = storage.tokens
    r = await post_as_client(storage, "/token", {"grant_type": "refresh_token", "refresh_token": first.refresh_token})
    check("a refresh succeeds once", r.status_code == 200, r.text)
    rotated = r.json()
    r = await post_as_client(storage, "/token", {"grant_type": "refresh_token", "refresh_token": first.refresh_token})
    check("the same refresh token again is refused", r.status_code == 400 and r.json()["error"] == "invalid_grant", r.text)
    r = await raw_call(URL, rotated["access_token"], "search_workflows", {})
    check("and every token of that grant stops working", r.status_code == 401, r.text)
    await http.aclose()

    summary["checks"] = checks
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main())
