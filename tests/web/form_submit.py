"""Fills and submits a plain HTML form in headless Chromium, as a person would.

    form_submit.py --url URL --chromium PATH [--field NAME=VALUE ...]

Prints one JSON line: the URL the browser ended on, the page's text and the
console messages (a CSP refusal shows there). Used by tests/tests/triggers.rs.
"""

import argparse
import json

from playwright.sync_api import sync_playwright

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--field", action="append", default=[])
    args = ap.parse_args()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=FLAGS)
        page = browser.new_page()
        console = []
        page.on("console", lambda m: console.append(m.text))
        page.goto(args.url)
        for f in args.field:
            name, value = f.split("=", 1)
            el = page.locator(f'[name="{name}"]')
            if el.evaluate("e => e.tagName") == "SELECT":
                el.select_option(value)
            else:
                el.fill(value)
        page.locator('button[type="submit"]').click()
        page.wait_for_load_state("load")
        page.wait_for_timeout(1000)
        print(json.dumps({"url": page.url, "text": page.inner_text("body"), "console": console}))
        browser.close()


if __name__ == "__main__":
    main()
