"""The web page in Debian's Chromium, driven by Playwright (never a
downloaded browser): every state the page has, a screenshot of each in
--out, and the page's weight and time to first rendered event, printed.

Run by tests/tests/web.rs against the local cloud it starts (scripted model,
tests/fixtures/web_script.json). Exits non-zero on the first failed check,
after a screenshot of the failing state."""

import argparse
import re
import socket
import sys
import threading
import time
import traceback

from playwright.sync_api import expect, sync_playwright

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
WAIT = 20_000
LONG_TEXT = " ".join(f"word{i:02d}" for i in range(1, 61))

args = None
shots = 0
checks = []


class Proxy:
    """The SSE origin as the browser sees it: a TCP proxy in front of the
    cloud, so the test can drop every open stream like a network would."""

    def __init__(self, port, upstream):
        self.upstream = upstream
        self.conns = []
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", port))
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.server.accept()
            up = socket.create_connection(("127.0.0.1", self.upstream))
            with self.lock:
                self.conns += [client, up]
            for a, b in ((client, up), (up, client)):
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop_all(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        return len(conns) // 2


def shot(page, name):
    global shots
    shots += 1
    page.screenshot(path=f"{args.out}/{shots:02d}-{name}.png")


def check(name):
    def wrap(fn):
        checks.append((name, fn))
        return fn
    return wrap


def sign_in(page, key):
    page.goto(args.url + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=WAIT)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("textbox", name="Message", exact=True)).to_be_visible(timeout=WAIT)


def new_conversation(page):
    menu = page.get_by_role("button", name="Show conversations")
    if menu.is_visible():
        menu.click()
    page.get_by_role("button", name="New conversation").click()
    expect(page.locator(".empty")).to_be_visible(timeout=WAIT)


def say(page, text):
    box = page.get_by_role("textbox", name="Message", exact=True)
    box.fill(text)
    box.press("Enter")
    return page.locator(".turn").last


def finished(turn):
    expect(turn.locator(".working")).to_have_count(0, timeout=WAIT)


S = {}


@check("sign-in, a refused key, then the empty state")
def _(ctx):
    page = ctx.new_page()
    page.goto(args.url + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=WAIT)
    page.wait_for_load_state("networkidle")
    weight = page.evaluate("""() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const res = performance.getEntriesByType('resource');
        return {transfer: nav.transferSize + res.reduce((s, r) => s + r.transferSize, 0),
                decoded: nav.decodedBodySize + res.reduce((s, r) => s + r.decodedBodySize, 0),
                requests: 1 + res.length};
    }""")
    print(f"figure: page weight on a first load: {weight['transfer'] / 1024:.1f} KB transferred "
          f"({weight['decoded'] / 1024:.1f} KB uncompressed) in {weight['requests']} requests", flush=True)
    assert weight["requests"] >= 10, weight
    shot(page, "sign-in")
    page.get_by_label("API key").fill("not-a-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signin-error")).to_contain_text("not accepted", timeout=WAIT)
    shot(page, "sign-in-refused")
    page.get_by_label("API key").fill(args.alice)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="What should we automate?")).to_be_visible(timeout=WAIT)
    expect(page.locator(".threads")).to_contain_text("No conversations yet")
    shot(page, "empty")
    S["page"] = page


@check("a full run renders in order: reasoning, tool call with result, markdown answer")
def _(ctx):
    page = S["page"]
    turn = say(page, "List my workflows")
    expect(turn.locator(".bubble")).to_have_text("List my workflows", timeout=WAIT)
    expect(turn.locator(".md table")).to_be_visible(timeout=WAIT)
    finished(turn)
    order = turn.locator(".msg-assistant > *").evaluate_all("els => els.map(e => e.className.split(' ')[0])")
    seq = [c for c in order if c in ("reasoning", "tool", "md")]
    assert seq == ["reasoning", "tool", "md"], order
    tool = turn.locator("details.tool")
    expect(tool).to_have_attribute("data-state", "done")
    expect(tool.locator("summary")).to_contain_text("workflows · list")
    expect(tool.locator("summary")).to_contain_text("3 workflows")
    tool.locator("summary").click()
    expect(tool.locator(".tool-body")).to_contain_text('"action": "list"')
    expect(tool.locator(".tool-body")).to_contain_text("CRM sync")
    turn.locator("details.reasoning summary").click()
    expect(turn.locator(".reasoning-text")).to_contain_text("list the workflows")
    expect(turn.locator(".md strong")).to_have_text("3 workflows")
    expect(page.locator(".threads")).to_contain_text("List my workflows", timeout=WAIT)
    expect(page.locator(".thread-title")).to_have_text("List my workflows")
    m = page.evaluate("() => window.__instanceAi")
    print(f"figure: time to first rendered event: {m['firstRenderMs']:.0f} ms after Send "
          f"(event received {m['firstEventMs']:.0f} ms, first answer text {m['firstTextMs']:.0f} ms)", flush=True)
    shot(page, "full-run")


ORDERS_CSV = b"Order ID,Customer,Amount\n1001,Ada Lovelace,120.5\n1002,Grace Hopper,80\n1003,Alan Turing,42\n"


@check("files attached to a message: chips in the composer, sent with it, read by parse-file, still there after a reload")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    picker = page.get_by_label("Choose files to attach")
    expect(page.get_by_role("button", name="Attach files")).to_be_visible()
    picker.set_input_files([
        {"name": "orders.csv", "mimeType": "text/csv", "buffer": ORDERS_CSV},
        {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"remember the milk"},
    ])
    chips = page.locator(".composer-files .file-chip")
    expect(chips).to_have_count(2)
    expect(chips.first).to_contain_text("orders.csv")
    expect(chips.first).to_contain_text(f"{len(ORDERS_CSV)} B")
    shot(page, "attach-chips")
    page.get_by_role("button", name="Remove notes.txt").click()
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("orders.csv")

    turn = say(page, "Summarise the attached orders")
    expect(chips).to_have_count(0)
    expect(page.locator(".composer-files")).to_be_hidden()
    expect(turn.locator(".md strong")).to_have_text("3 orders", timeout=WAIT)
    finished(turn)
    turn = page.locator(".turn[data-run-id]").last
    sent = turn.locator(".msg-user .file-chip")
    expect(sent).to_have_count(1)
    expect(sent).to_contain_text("orders.csv")
    expect(sent).to_contain_text(f"{len(ORDERS_CSV)} B")
    expect(sent.locator("button")).to_have_count(0)
    tool = turn.locator("details.tool")
    expect(tool).to_have_attribute("data-state", "done")
    expect(tool.locator("summary")).to_contain_text("parse-file")
    tool.locator("summary").click()
    expect(tool.locator(".tool-body")).to_contain_text("Ada Lovelace")
    expect(tool.locator(".tool-body")).to_contain_text("customer")
    shot(page, "attach-sent")

    # A reload restores the message with its file (metadata from the event log).
    page.reload()
    turn = page.locator(".turn").last
    expect(turn.locator(".bubble")).to_have_text("Summarise the attached orders", timeout=WAIT)
    expect(turn.locator(".msg-user .file-chip")).to_contain_text("orders.csv")
    expect(turn.locator(".msg-user .file-chip")).to_contain_text(f"{len(ORDERS_CSV)} B")
    shot(page, "attach-restored")

    # Too large: the server's own words, and the file and text stay to fix it.
    big = b"a," * (2 * 1024 * 1024 + 1024)
    picker.set_input_files([{"name": "huge.csv", "mimeType": "text/csv", "buffer": big}])
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("4.0 MB")
    box = page.get_by_role("textbox", name="Message", exact=True)
    box.fill("Summarise the attached orders")
    box.press("Enter")
    expect(page.locator(".banner")).to_contain_text("exceed 4 MiB", timeout=WAIT)
    expect(box).to_have_value("Summarise the attached orders")
    expect(chips).to_have_count(1)
    expect(page.locator(".turn")).to_have_count(1)
    shot(page, "attach-too-large")
    page.get_by_role("button", name="Remove huge.csv").click()
    expect(page.locator(".composer-files")).to_be_hidden()
    box.fill("")


@check("a questions card: single choice with the page's own free text, and a text question")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Ask me a question")
    card = turn.locator('[data-card="questions"]')
    expect(card).to_be_visible(timeout=WAIT)
    expect(card).to_contain_text("One quick question before I build it")
    expect(card.get_by_role("radio", name="#alerts")).to_be_visible()
    shot(page, "questions-card")
    card.get_by_label("Your own answer").fill("#ops-alerts")
    expect(card.get_by_role("radio", name="Something else")).to_be_checked()
    card.get_by_label("Anything else I should know?").fill("Weekdays only")
    card.get_by_role("button", name="Send answers").click()
    expect(turn.locator(".decided")).to_contain_text("#ops-alerts; Weekdays only", timeout=WAIT)
    expect(turn.locator(".md").last).to_have_text("Thanks, I noted your answers.", timeout=WAIT)
    finished(turn)
    tool = turn.locator("details.tool").first
    tool.locator("summary").click()
    expect(tool.locator(".tool-body")).to_contain_text('"answer": "#ops-alerts"')
    shot(page, "questions-answered")


@check("an approval denied with a reason, then the next one approved by keyboard")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Delete the scratch workflows")
    card = turn.locator('[data-card="approval"]')
    expect(card).to_be_visible(timeout=WAIT)
    expect(card.locator(".card-title")).to_have_text("Assistant wants to archive Scratch wf-1")
    expect(card).to_contain_text("It stops running")
    expect(card.locator(".details")).to_contain_text("Last Run")
    shot(page, "approval-card")
    card.get_by_role("button", name="Deny").click()
    card.get_by_label("Why are you denying this? (optional)").fill("Keep this one, it is still used")
    card.get_by_role("button", name="Send denial").click()
    second = turn.locator('[data-card="approval"]')
    expect(second.locator(".card-title")).to_have_text("Assistant wants to archive Scratch wf-2", timeout=WAIT)
    approve = second.get_by_role("button", name="Approve", exact=True)
    approve.focus()
    page.keyboard.press("Enter")
    expect(turn.locator(".md").last).to_have_text("Done: I left the first one alone and archived the second.", timeout=WAIT)
    finished(turn)
    tools = turn.locator("details.tool")
    expect(tools).to_have_count(2)
    expect(tools.nth(0).locator("summary")).to_contain_text("denied")
    expect(turn.locator(".decided")).to_have_count(2)
    expect(turn.locator(".decided").nth(0)).to_contain_text("You denied this.")
    expect(turn.locator(".decided").nth(1)).to_contain_text("You approved this.")
    tools.nth(0).locator("summary").click()
    expect(tools.nth(0).locator(".tool-body")).to_contain_text("Keep this one")
    shot(page, "approval-denied-then-approved")


@check("'always allow for this session' skips the next prompt of the same action")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Clean up the drafts")
    card = turn.locator('[data-card="approval"]')
    expect(card).to_be_visible(timeout=WAIT)
    card.get_by_role("button", name="Always allow for this session").click()
    expect(turn.locator(".md").last).to_have_text("Both drafts are archived.", timeout=WAIT)
    finished(turn)
    expect(turn.locator("details.tool[data-state=done]")).to_have_count(2)
    expect(turn.locator(".decided")).to_have_count(1)
    expect(turn.locator(".card")).to_have_count(0)


@check("plan review, background agents as collapsible children, the live checklist")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Plan the weather build")
    card = turn.locator('[data-card="plan-review"]')
    expect(card).to_be_visible(timeout=WAIT)
    expect(card.locator(".plan-item")).to_have_count(2)
    expect(card.locator(".plan-item").nth(1)).to_contain_text("After: Build weather workflow")
    expect(turn.locator(".checklist")).to_contain_text("0 of 2 done")
    shot(page, "plan-review")
    card.get_by_role("button", name="Approve plan").click()
    agents = turn.locator("details.subagent")
    expect(agents.first).to_be_visible(timeout=WAIT)
    expect(agents.first).to_contain_text("Build weather workflow")
    expect(turn.locator(".md").first).to_have_text("The plan is running in the background.", timeout=WAIT)
    expect(agents).to_have_count(2, timeout=WAIT)
    expect(agents.nth(0).locator(".status-pill")).to_have_text("Done", timeout=WAIT)
    expect(agents.nth(1).locator(".status-pill")).to_have_text("Done", timeout=WAIT)
    expect(agents.nth(1)).to_contain_text("Weather workflow verified")
    agents.nth(0).locator("summary").click()
    expect(agents.nth(0).locator(".subagent-body")).to_be_hidden()
    agents.nth(0).locator("summary").click()
    expect(agents.nth(0).locator(".subagent-body")).to_contain_text("Built the weather workflow.")
    S["plan_url"] = page.url
    shot(page, "background-agents")


@check("a background task stopped by its own stop button")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Plan a long build")
    turn.locator('[data-card="plan-review"]').get_by_role("button", name="Approve plan").click(timeout=WAIT)
    agent = turn.locator("details.subagent")
    expect(agent.locator("details.tool[data-state=pending]")).to_contain_text("slow", timeout=WAIT)
    stop = agent.get_by_role("button", name="Stop background task Long import")
    shot(page, "background-task-running")
    stop.click()
    expect(agent.locator(".status-pill")).to_have_text("Stopped", timeout=WAIT)
    expect(agent.get_by_role("button", name="Stop background task Long import")).to_have_count(0)
    shot(page, "background-task-stopped")


@check("Stop mid-stream ends the answer and gives the composer back")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Stream a long answer slowly")
    expect(turn.locator(".md")).to_contain_text("word05", timeout=WAIT)
    expect(page.get_by_role("button", name="Send")).to_be_hidden()
    shot(page, "streaming")
    page.get_by_role("button", name="Stop the response").click()
    expect(turn.locator(".finish")).to_have_text("You stopped this response.", timeout=WAIT)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert "word60" not in turn.locator(".md").inner_text()
    shot(page, "stopped")


@check("a reload mid-stream resumes with no duplicated text and nothing lost")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Stream another long answer")
    expect(turn.locator(".md")).to_contain_text("word10", timeout=WAIT)
    page.reload()
    turn = page.locator(".turn").last
    expect(turn.locator(".bubble")).to_have_text("Stream another long answer", timeout=WAIT)
    shot(page, "reloaded-mid-stream")
    expect(turn.locator(".md")).to_contain_text("word60", timeout=WAIT)
    finished(turn)
    text = " ".join(turn.locator(".md").all_inner_texts())
    assert re.sub(r"\s+", " ", text).strip() == LONG_TEXT, text
    expect(page.locator(".turn")).to_have_count(1)
    expect(page.locator(".bubble")).to_have_count(1)
    shot(page, "reloaded-complete")


@check("a dropped stream reconnects with Last-Event-ID and loses nothing")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    cursors = []
    page.on("request", lambda r: cursors.append(r.headers.get("last-event-id")) if "/instance-ai/events/" in r.url else None)
    turn = say(page, "Stream a long answer slowly")
    expect(turn.locator(".md")).to_contain_text("word05", timeout=WAIT)
    assert proxy.drop_all() >= 1, "no stream to drop"
    expect(turn.locator(".md")).to_contain_text("word60", timeout=WAIT)
    finished(turn)
    text = re.sub(r"\s+", " ", " ".join(turn.locator(".md").all_inner_texts())).strip()
    assert text == LONG_TEXT, text
    resumed = [int(c) for c in cursors if c]
    assert resumed and resumed[-1] > 0, f"no reconnect carried Last-Event-ID: {cursors}"
    expect(page.locator(".conn")).to_have_text("Live")


@check("a domain-access card")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Check example.com for me")
    card = turn.locator('[data-card="domain"]')
    expect(card.locator(".card-title")).to_have_text("Allow the assistant to reach example.com?", timeout=WAIT)
    expect(card.locator(".url")).to_have_text("https://example.com/pricing")
    shot(page, "domain-access")
    card.get_by_role("button", name="Allow once").click()
    expect(turn.locator(".md").last).to_have_text("The page loaded.", timeout=WAIT)


@check("a credential card: the type's own form, and the secret goes to the credentials API, never into the page")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Connect my Slack")
    card = turn.locator('[data-card="credentials"]')
    expect(card).to_contain_text("httpHeaderAuth", timeout=WAIT)
    card.get_by_label("Name", exact=True).fill("X-Slack-Token")
    card.get_by_label("Value", exact=True).fill("xoxb-secret-value")
    expect(card.get_by_label("Value", exact=True)).to_have_attribute("type", "password")
    card.get_by_role("button", name="Save credential").click()
    expect(card.get_by_role("button", name="Saved")).to_be_visible(timeout=WAIT)
    expect(card.get_by_label("Value", exact=True)).to_have_value("")
    shot(page, "credential-card")
    card.get_by_role("button", name="Skip for now").click()
    expect(turn.locator(".md").last).to_have_text("Okay, we can connect Slack later.", timeout=WAIT)
    assert "xoxb-secret-value" not in page.content()


@check("a workflow setup card renders its nodes from the event")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Set up the invoice workflow")
    card = turn.locator('[data-card="setup"]')
    expect(card.locator(".setup-item")).to_have_count(2, timeout=WAIT)
    expect(card).to_contain_text("Fetch invoices")
    expect(card).to_contain_text("Pick the hour it should run")
    shot(page, "setup-card")
    card.get_by_role("button", name="Skip for now").click()
    expect(turn.locator(".md").last).to_have_text("Setup skipped for now.", timeout=WAIT)


@check("a failed run is explained in words")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "Trigger a model error")
    expect(turn.locator(".callout-error")).to_contain_text("no scripted conversation", timeout=WAIT)
    expect(turn.locator(".finish-error")).to_have_text("The assistant could not finish.")
    shot(page, "run-error")


@check("409: a stale tab that sends while a run is active is told so in words")
def _(ctx):
    page = S["page"]
    new_conversation(page)
    turn = say(page, "List my workflows")
    finished(turn)
    stale = ctx.new_page()
    # This tab's event stream is down, so it does not know a run started.
    stale.route(re.compile(r".*/instance-ai/events/.*"), lambda route: route.abort())
    stale.goto(page.url)
    expect(stale.locator(".turn")).to_have_count(1, timeout=WAIT)
    turn = say(page, "Stream a long answer slowly")
    expect(turn.locator(".md")).to_contain_text("word02", timeout=WAIT)
    stale.get_by_role("textbox", name="Message", exact=True).fill("Hello again")
    stale.get_by_role("textbox", name="Message", exact=True).press("Enter")
    expect(stale.locator(".banner")).to_contain_text("already in progress", timeout=WAIT)
    expect(stale.get_by_role("textbox", name="Message", exact=True)).to_have_value("Hello again")
    expect(stale.get_by_role("button", name="Stop the response")).to_be_visible()
    shot(stale, "conflict-409")
    stale.close()
    page.get_by_role("button", name="Stop the response").click()
    expect(turn.locator(".finish")).to_be_visible(timeout=WAIT)


@check("every control has an accessible name")
def _(ctx):
    page = S["page"]
    page.goto(S["plan_url"])
    expect(page.locator("details.subagent").first).to_be_visible(timeout=WAIT)
    unnamed = page.evaluate("""() => [...document.querySelectorAll('button, input, textarea, select, a')]
        .filter(e => !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector(`label[for="${e.id}"]`)) || e.closest('label')))
        .map(e => e.outerHTML.slice(0, 120))""")
    assert not unnamed, unnamed


@check("at 375 px: no sideways scrolling, the conversation list in a drawer")
def _(ctx):
    mobile = browser.new_context(viewport={"width": 375, "height": 812}, device_scale_factor=2)
    page = mobile.new_page()
    sign_in(page, args.alice)
    page.goto(S["plan_url"])
    expect(page.locator("details.subagent").first).to_be_visible(timeout=WAIT)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 375, f"page is {width}px wide"
    expect(page.locator(".sidebar")).not_to_be_in_viewport()
    shot(page, "mobile-375")
    page.get_by_role("button", name="Show conversations").click()
    expect(page.locator(".sidebar")).to_be_in_viewport()
    page.wait_for_timeout(400)  # the slide-in transition
    shot(page, "mobile-375-drawer")
    page.keyboard.press("Escape")
    expect(page.locator(".sidebar")).not_to_be_in_viewport()
    new_conversation(page)
    turn = say(page, "Delete the scratch workflows")
    expect(turn.locator('[data-card="approval"]')).to_be_visible(timeout=WAIT)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    shot(page, "mobile-375-card")
    mobile.close()


@check("a second user sees none of the first user's conversations")
def _(ctx):
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    page = other.new_page()
    sign_in(page, args.bob)
    expect(page.locator(".threads")).to_contain_text("No conversations yet", timeout=WAIT)
    page.goto(S["plan_url"])
    expect(page.locator(".banner")).to_contain_text("does not exist, or it belongs to someone else", timeout=WAIT)
    expect(page.locator(".turn")).to_have_count(0)
    shot(page, "second-user")
    other.close()


@check("an MCP client's OAuth consent page shares the page's sign-in: approve sends the browser back with a code")
def _(ctx):
    import base64, hashlib, json, urllib.parse
    page = S["page"]
    cb = "http://127.0.0.1:9/oauth-callback"
    reg = page.request.post(args.url + "/register", data=json.dumps(
        {"redirect_uris": [cb], "client_name": "Browser test client", "token_endpoint_auth_method": "none"}),
        headers={"content-type": "application/json"})
    assert reg.status == 201, reg.text()
    client_id = reg.json()["client_id"]
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = urllib.parse.urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": cb, "state": "browser-state",
                                    "code_challenge": challenge, "code_challenge_method": "S256", "scope": "mcp:read mcp:write"})
    landed = []
    page.route(cb + "*", lambda route: (landed.append(route.request.url), route.fulfill(status=200, body="back at the client")))
    page.goto(f"{args.url}/authorize?{query}")
    expect(page.get_by_role("heading", name="Connect Browser test client to Instance AI?")).to_be_visible(timeout=WAIT)
    # Signed in on the web page: the consent page uses that key and asks for none.
    expect(page.locator("#signed-in")).to_be_visible()
    expect(page.get_by_label("Sign in: your Instance AI API key")).to_be_hidden()
    expect(page.get_by_role("checkbox", name=re.compile("mcp:read"))).to_be_checked()
    expect(page.get_by_role("checkbox", name=re.compile("mcp:execute"))).to_have_count(0)
    shot(page, "oauth-consent")
    page.get_by_role("checkbox", name=re.compile("mcp:write")).uncheck()
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("body")).to_contain_text("back at the client", timeout=WAIT)
    back = urllib.parse.parse_qs(urllib.parse.urlparse(landed[-1]).query)
    assert back["state"] == ["browser-state"] and back["code"][0].startswith("iac_"), landed
    token = page.request.post(args.url + "/token", form={"grant_type": "authorization_code", "code": back["code"][0],
                              "client_id": client_id, "redirect_uri": cb, "code_verifier": verifier})
    assert token.status == 200 and token.json()["scope"] == "mcp:read", token.text()
    page.unroute(cb + "*")
    page.goto(args.url + "/")
    expect(page.get_by_role("textbox", name="Message", exact=True)).to_be_visible(timeout=WAIT)


@check("sign out forgets the key; a refused stored key returns to sign-in")
def _(ctx):
    page = S["page"]
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=WAIT)
    assert page.evaluate("() => localStorage.getItem('instance-ai.key')") is None
    page.evaluate("() => localStorage.setItem('instance-ai.key', 'revoked-key')")
    page.reload()
    expect(page.locator("#signin-error")).to_contain_text("not accepted", timeout=WAIT)
    shot(page, "signed-out")


def main():
    global args, browser, proxy
    p = argparse.ArgumentParser()
    for a in ("--url", "--alice", "--bob", "--out", "--chromium", "--sse-port"):
        p.add_argument(a, required=True)
    args = p.parse_args()
    proxy = Proxy(int(args.sse_port), int(args.url.rsplit(":", 1)[1]))
    expect.set_options(timeout=WAIT)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=FLAGS)
        ctx = browser.new_context(viewport={"width": 1280, "height": 860})
        ctx.set_default_timeout(WAIT)
        # The page's own errors, printed: a failed check then says why.
        ctx.on("page", lambda pg: pg.on("pageerror", lambda e: print(f"page error ({pg.url}): {e}", flush=True)))
        done = 0
        for name, fn in checks:
            t = time.monotonic()
            try:
                fn(ctx)
            except Exception:
                traceback.print_exc()
                for pg in ctx.pages:
                    try:
                        pg.screenshot(path=f"{args.out}/failed.png")
                    except Exception:
                        pass
                print(f"browser check FAILED: {name}", flush=True)
                print(f"browser checks: {done} of {len(checks)} done before the failure", flush=True)
                browser.close()
                sys.exit(1)
            done += 1
            print(f"browser check ok: {name} ({time.monotonic() - t:.1f} s)", flush=True)
        browser.close()
    print(f"browser checks: all {done} of {len(checks)} ok; {shots} screenshots in {args.out}", flush=True)


if __name__ == "__main__":
    main()
