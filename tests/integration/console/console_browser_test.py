#!/usr/bin/env python3
"""The console in headless Chromium against a live pacerd (console_test.sh
starts it): campaigns render and their progress moves; a campaign named
<img src=x onerror=alert(1)> renders as text; controls refuse without the
token; a rate set through the UI reaches /metrics and the achieved rate; the
providers page works from a bookmark; the campaign list fits 1366x768 and
390x844 without scrolling sideways.
Screenshots go to $CONSOLE_ARTIFACTS."""
import json
import os
import re
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

BASE = os.environ["CONSOLE_BASE"]
ARTIFACTS = os.environ["CONSOLE_ARTIFACTS"]
TOKEN = os.environ["ADMIN_TOKEN"]
XSS = os.environ["XSS"]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def eventually(fn, limit_s, what):
    end = time.time() + limit_s
    last = None
    while time.time() < end:
        try:
            last = fn()
            if last:
                print(f"ok: {what}", flush=True)
                return last
        except Exception as e:  # the page is re-rendered every second: retry
            last = e
        time.sleep(0.25)
    raise AssertionError(f"{what} (not within {limit_s} s; last: {last!r})")


def http(path, method="GET", body=None, headers=None):
    req = urllib.request.Request(BASE + path, method=method, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def top_row(campaign):
    _, _, body = http("/api/v1/top")
    for row in json.loads(body)["campaigns"]:
        if row["id"] == campaign:
            return row
    return None


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1500,1100",
              f"--user-data-dir={tempfile.mkdtemp(dir=os.environ.get('CONSOLE_TMP'))}"]:
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    # Before any page script: record alerts instead of showing them (CDP scripts are not subject to the page's CSP).
    d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                      {"source": "window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m));"})
    return d


def sent_of(d, campaign):
    for row in d.find_elements(By.CSS_SELECTOR, "#campaigns tbody tr"):
        if row.get_attribute("data-campaign") == campaign:
            return int(row.find_element(By.CSS_SELECTOR, ".sent").text.replace(",", ""))
    return None


MAX_STREAMS = 128  # the listener's default (AdminServerOptions::max_streams)


def open_stream(host, port):
    """One raw stream client asking as a console: the socket, or None when refused (503)."""
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(f"GET /api/v1/events?client=console HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    if b" 503 " in head.split(b"\r\n", 1)[0]:
        s.close()
        return None
    return s


def crowd_of_streams():
    """Raw stream clients asking as consoles until they hold every one of the
    listener's streams (within 10 s), and the next is refused; returns the open
    sockets. The listener frees the slot of a stream its client closed (the
    page's own, left for about:blank) only when a write to it fails, a second
    or two later: a crowd that stopped at the first refusal left that slot to
    the page."""
    host, port = urllib.parse.urlsplit(BASE).netloc.rsplit(":", 1)
    crowd = []
    deadline = time.monotonic() + 10
    while len(crowd) < MAX_STREAMS and time.monotonic() < deadline:
        s = open_stream(host, port)
        if s is None:
            time.sleep(0.2)  # a poll interval: closed streams' slots free as the listener writes
        else:
            crowd.append(s)
    check(len(crowd) == MAX_STREAMS, f"the crowd holds all {MAX_STREAMS} streams (it holds {len(crowd)})")
    check(open_stream(host, port) is None, "the next stream is refused")
    return crowd


def viewport(d, width, height, phone):
    """The page's viewport exactly (CSS pixels, scale 1 so screenshots stay small)."""
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": phone})


# Widths of what would scroll sideways: the page, the campaign list's card (its
# own horizontal scroll), and how far right the rightmost cell of any row ends.
OVERFLOW_JS = """
const card = document.getElementById('campaigns').closest('.card');
let right = 0;
for (const td of document.querySelectorAll('#campaigns tbody td')) right = Math.max(right, td.getBoundingClientRect().right);
let chartRight = 0;
for (const c of document.querySelectorAll('svg.chart')) chartRight = Math.max(chartRight, c.getBoundingClientRect().right);
return {inner: window.innerWidth, page: document.documentElement.scrollWidth,
        card: card.scrollWidth, cardBox: card.clientWidth, right: right, chartRight: chartRight,
        head: getComputedStyle(document.querySelector('#campaigns thead')).display};
"""


def no_sideways_scroll(d, what):
    m = d.execute_script(OVERFLOW_JS)
    check(m["page"] <= m["inner"] and m["card"] <= m["cardBox"] and m["right"] <= m["inner"] + 0.5
          and m["chartRight"] <= m["inner"] + 0.5,
          f"{what}: no horizontal scroll on the campaign list, every cell and chart inside the viewport ({m})")
    return m


def layouts(d):
    """A laptop (1366x768) and a phone (390x844): the campaign list, "limited by"
    included, fits without scrolling sideways; on the phone each campaign is a card
    and the campaign page's chart ends ("now") inside the screen."""
    try:
        viewport(d, 1366, 768, False)
        d.get("about:blank")
        d.get(BASE + "/console/#/campaigns")
        eventually(lambda: len(d.find_elements(By.CSS_SELECTOR, "#campaigns tbody tr")) == 3, 15, "1366x768: the campaigns render")
        eventually(lambda: d.execute_script(
            "const cs = [...document.querySelectorAll('#campaigns svg.chart')];"
            "return cs.length === 3 && cs.every((c) => c.querySelector('path, polyline'));"),
            10, "1366x768: every campaign's chart is drawn")
        m = no_sideways_scroll(d, "1366x768")
        check(m["head"] != "none", "1366x768: the campaigns are a table with headings")
        # Read in one script: the list is redrawn every second (no stale elements).
        eventually(lambda: d.execute_script(
            "const tds = [...document.querySelectorAll('#campaigns tbody td.limited')];"
            "return tds.length === 3 && tds.every((td) => td.textContent.trim() !== ''"
            " && td.getBoundingClientRect().right <= window.innerWidth && td.getBoundingClientRect().width > 0);"),
            5, "1366x768: every campaign's \"limited by\" is shown inside the viewport")
        d.save_screenshot(os.path.join(ARTIFACTS, "console-1366x768.png"))
        viewport(d, 390, 844, True)
        eventually(lambda: d.execute_script(
            "return getComputedStyle(document.querySelector('#campaigns thead')).display === 'none';"),
            10, "390x844: the phone layout applies")
        m = no_sideways_scroll(d, "390x844")
        check(m["head"] == "none", "390x844: the campaigns are cards (no table heading row)")
        d.save_screenshot(os.path.join(ARTIFACTS, "console-390x844.png"))
        d.get(BASE + "/console/#/campaign/spring")
        eventually(lambda: d.find_element(By.CSS_SELECTOR, "dd.detail-sent").text != "", 15, "390x844: the campaign page renders")
        right = d.execute_script("let r = 0; for (const c of document.querySelectorAll('svg.chart'))"
                                 " r = Math.max(r, c.getBoundingClientRect().right); return [r, window.innerWidth];")
        check(0 < right[0] <= right[1] + 0.5, f"390x844: the campaign chart ends, at 'now', inside the screen ({right})")
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def main():
    status, headers, _ = http("/console/")
    check(status == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
          and "'unsafe-inline'" not in headers["Content-Security-Policy"],
          "the console page is served with a CSP that forbids inline script and other origins")
    d = browser()
    try:
        d.get(BASE + "/console/")
        eventually(lambda: len(d.find_elements(By.CSS_SELECTOR, "#campaigns tbody tr")) == 3, 30,
                   "three campaigns render")
        ids = ["spring", "news", XSS]
        first = {c: sent_of(d, c) for c in ids}
        eventually(lambda: all(sent_of(d, c) > first[c] for c in ids), 30,
                   f"every campaign's progress moves (from {first})")

        # The hostile name: text, not markup; no alert, no img element.
        # Read within eventually(): a re-render between finding the rows and
        # reading them leaves stale elements (a retry, not a failure).
        def hostile_row_is_text():
            row = [r for r in d.find_elements(By.CSS_SELECTOR, "#campaigns tbody tr")
                   if r.get_attribute("data-campaign") == XSS]
            return len(row) == 1 and row[0].find_element(By.CSS_SELECTOR, "a.campaign-link").text == XSS
        eventually(hostile_row_is_text, 10, "the campaign named <img src=x onerror=alert(1)> shows its name as text")
        check(d.find_elements(By.TAG_NAME, "img") == [], "no img element anywhere on the page")
        d.save_screenshot(os.path.join(ARTIFACTS, "console-campaigns.png"))
        d.get(BASE + "/console/#/campaign/" + urllib.parse.quote(XSS, safe=""))
        eventually(lambda: d.find_element(By.ID, "detail-title").text == XSS, 15, "its detail page titles it as text")
        check(d.find_elements(By.TAG_NAME, "img") == [], "no img element on its detail page")
        check(d.execute_script("return window.__alerts.length") == 0, "no alert was raised")
        try:
            d.switch_to.alert
            check(False, "no alert dialog is open")
        except NoAlertPresentException:
            print("ok: no alert dialog is open")

        # Controls without the token: refused, and the UI says why.
        d.get(BASE + "/console/#/campaign/news")
        eventually(lambda: d.find_element(By.CSS_SELECTOR, "dd.detail-sent").text != "", 15, "the news detail page renders")
        d.find_element(By.ID, "pause-btn").click()
        eventually(lambda: "Refused (401)" in d.find_element(By.ID, "control-result").text, 10,
                   "pausing without the token is refused with 401 and the page says so")
        code = d.execute_async_script(
            "const done = arguments[0]; fetch('/api/v1/campaigns/news/pause', {method: 'POST', body: '{}'})"
            ".then(r => done(r.status), e => done(String(e)));")
        check(code == 401, f"a control POST without a token answers 401 (got {code})")
        check(http("/api/v1/campaigns/news/pause", "POST", b"{}", {"Authorization": "Bearer wrong"})[0] == 401,
              "a control POST with a wrong token answers 401")
        check(top_row("news")["state"] == "active", "the refused pause changed nothing")

        # With the token: set spring's rate from 60 to 150 through the UI.
        before = eventually(lambda: (top_row("spring")["achieved_rate"] or 0) > 45 and top_row("spring")["achieved_rate"],
                            30, "spring sends near its send_rate of 60/s")
        d.get(BASE + "/console/#/campaign/spring")
        d.find_element(By.ID, "token-input").send_keys(TOKEN)
        d.find_element(By.ID, "token-save").click()
        eventually(lambda: "token set" in d.find_element(By.ID, "token-state").text, 5, "the token is kept for the tab")
        check(d.execute_script("return document.cookie") == "", "no cookie holds the token")
        d.find_element(By.ID, "rate-input").send_keys("150")
        d.find_element(By.ID, "rate-btn").click()
        eventually(lambda: "Done: set-rate" in d.find_element(By.ID, "control-result").text, 10,
                   "the set-rate is accepted and the page says so")
        eventually(lambda: re.search(r'^pacer_campaign_send_rate\{campaign="spring",provider="sms"\} 150$',
                                     http("/metrics")[2], re.M), 10, "/metrics shows spring's new send_rate 150")
        eventually(lambda: d.find_element(By.CSS_SELECTOR, "dd.detail-send-rate").text == "150/s", 10,
                   "the page shows the new configured rate")
        after = eventually(lambda: (top_row("spring")["achieved_rate"] or 0) > 110 and top_row("spring")["achieved_rate"],
                           40, f"spring's achieved rate rises above 110/s (it was {before:.1f}/s)")
        print(f"achieved rate of spring: {before:.1f}/s at 60/s -> {after:.1f}/s at 150/s")
        time.sleep(20)  # let the chart show the step before the screenshots
        d.save_screenshot(os.path.join(ARTIFACTS, "console-campaign.png"))
        d.get("about:blank")  # a bookmark: the providers page is the first one the tab loads
        d.get(BASE + "/console/#/providers")
        eventually(lambda: len(d.find_elements(By.CSS_SELECTOR, "div[data-provider]")) == 1, 10, "the providers view renders")
        eventually(lambda: [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#provider-select option")]
                   == ["sms"], 10, "opened directly, the provider rate form lists the provider")
        eventually(lambda: d.find_element(By.CSS_SELECTOR, "dd.provider-health").text.startswith("ok ("), 10,
                   "the provider's health reads ok, with its counts")
        eventually(lambda: d.find_element(By.CSS_SELECTOR, "dd.cluster-throttled").text == "0", 10,
                   "every worker's 429/503 count is shown (0: a null sink never throttles)")
        d.save_screenshot(os.path.join(ARTIFACTS, "console-providers.png"))
        d.get(BASE + "/console/#/campaigns")
        eventually(lambda: len(d.find_elements(By.CSS_SELECTOR, "#campaigns tbody tr")) == 3, 10, "back to the campaigns")
        time.sleep(1.5)
        d.save_screenshot(os.path.join(ARTIFACTS, "console.png"))
        layouts(d)

        # Every stream taken: the page's own stream is answered 503; it still
        # shows the figures by polling, says so, and goes live again once
        # streams free up.
        d.get("about:blank")  # the page gives its stream back
        crowd = crowd_of_streams()
        print(f"ok: {len(crowd)} streams open, the next one refused")
        try:
            d.get(BASE + "/console/#/campaigns")
            eventually(lambda: len(d.find_elements(By.CSS_SELECTOR, "#campaigns tbody tr")) == 3, 15,
                       "with its stream refused the page renders the campaigns from polling")
            eventually(lambda: d.find_element(By.ID, "status").text.startswith("polling"), 10,
                       "the header says it is polling while the stream reconnects")
            first = sent_of(d, "spring")
            eventually(lambda: sent_of(d, "spring") > first, 15, "polled figures keep moving")
            check("last update" in d.find_element(By.ID, "status").text, "the header says how old the figures are")
        finally:
            for c in crowd:
                c.close()
        eventually(lambda: d.find_element(By.ID, "status").text.startswith("live"), 45,
                   "the page goes live on its stream again once streams free up")
        check(d.execute_script("return window.__alerts.length") == 0, "still no alert at the end")
    finally:
        d.quit()
    print("browser test: PASS")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
