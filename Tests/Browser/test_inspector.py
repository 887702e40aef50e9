"""The inspector page in a real browser (Chromium, headless) against the real service.

Each test drives the page served by `attach-fetch serve` at `/` over HTTP on 127.0.0.1, with
media from a local origin; the console must hold no error after each (see conftest.py).
"""
import html.parser
import importlib.util
import json
import os
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import BINARY, ROOT

TIMEOUT = 30
FINAL_STATUSES = {"ready", "rejected", "failed", "timedout"}


# --- helpers ------------------------------------------------------------------------------

def wait(browser, timeout=TIMEOUT):
    # The page replaces its results when a new answer comes: an element may go stale mid-check.
    return WebDriverWait(browser, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException])


def open_page(browser, base, query=""):
    browser.get(base + "/" + query)
    wait(browser).until(EC.presence_of_element_located((By.ID, "inspect-form")))


def set_field(browser, element_id, text):
    """Types into a field as a person would (short text), or sets it and fires `input` (long)."""
    element = browser.find_element(By.ID, element_id)
    element.clear()
    if len(text) <= 400:
        element.send_keys(text)
    else:
        browser.execute_script(
            "arguments[0].value = arguments[1];"
            "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));"
            "arguments[0].dispatchEvent(new Event('change', {bubbles: true}));", element, text)


def inspect_url(browser, url):
    set_field(browser, "payload", "")
    set_field(browser, "url", url)
    browser.find_element(By.ID, "inspect").click()


def inspect_payload(browser, payload):
    set_field(browser, "url", "")
    set_field(browser, "payload", json.dumps(payload, separators=(",", ":")))
    browser.find_element(By.ID, "inspect").click()


def cards(browser):
    return browser.find_elements(By.CSS_SELECTOR, "#results .attachment")


def wait_for_cards(browser, count, timeout=TIMEOUT):
    """The result's `count` cards, each with a final status."""
    def done(driver):
        found = cards(driver)
        if len(found) != count:
            return False
        statuses = [card.find_element(By.CSS_SELECTOR, ".status").text.strip().lower() for card in found]
        return found if all(status in FINAL_STATUSES for status in statuses) else False

    try:
        return wait(browser, timeout).until(done)
    except Exception:
        found = cards(browser)
        message = browser.find_element(By.ID, "message").text if browser.find_elements(By.ID, "message") else ""
        raise AssertionError(f"expected {count} finished .attachment cards; found {len(found)} "
                             f"({[c.text[:80] for c in found]}); #message: {message!r}")


def status(card):
    return card.find_element(By.CSS_SELECTOR, ".status").text.strip()


def image_loaded(browser, image):
    return browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image)


def wait_image_loaded(browser, image):
    try:
        wait(browser).until(lambda driver: image_loaded(driver, image))
    except Exception:
        src = image.get_attribute("src")
        raise AssertionError(f"image {src[:120]!r} did not load (naturalWidth 0)")


def visible_with_content(element):
    return element.is_displayed() and element.text.strip() != "" or bool(
        element.find_elements(By.CSS_SELECTOR, "img"))


def apns_payload(title, image_url, body="Body of the notification"):
    return {"aps": {"alert": {"title": title, "body": body}, "mutable-content": 1}, "image_url": image_url}


def three_attachments(origin, tag):
    """A photo, a 404 and a video; `tag` makes the URLs new to the service's cache."""
    return {"aps": {"alert": {"title": "Three attachments", "body": "A photo, a missing file, a video"},
                    "mutable-content": 1},
            "com.urbanairship.media_attachment": {"url": [origin.url(f"{name}?{tag}")
                                                          for name in ("photo.jpg", "missing.jpg", "clip.mp4")]}}


def set_width(browser, width):
    browser.set_window_size(width, 1000)
    wait(browser, 5).until(lambda driver: driver.execute_script("return window.innerWidth") == width)


def no_horizontal_scroll(browser):
    scroll_width, inner_width = browser.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= inner_width, f"horizontal scroll: scrollWidth {scroll_width} > innerWidth {inner_width}"


def axe_source():
    spec = importlib.util.find_spec("axe_playwright_python")
    assert spec is not None, "axe-playwright-python is not installed (Tests/Browser/requirements.txt)"
    return (Path(spec.submodule_search_locations[0]) / "axe.min.js").read_text()


def run_axe(browser):
    browser.execute_script(axe_source())
    result = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        axe.run().then(r => done({violations: r.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            targets: v.nodes.map(n => n.target.join(' '))}))}))
          .catch(e => done({error: String(e)}));
    """)
    assert "error" not in result, f"axe.run failed: {result['error']}"
    bad = [v for v in result["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, "axe violations:\n" + "\n".join(
        f"  {v['id']} ({v['impact']}): {v['help']} — {v['targets'][:5]}" for v in bad)


def screenshot(browser, directory, name):
    """The whole page as far as 4,000 px: the window made as tall as the document."""
    if directory is None:
        return
    chrome = browser.execute_script("return window.outerHeight - window.innerHeight")
    height = min(4000, browser.execute_script("return document.documentElement.scrollHeight"))
    width = browser.execute_script("return window.innerWidth")
    browser.set_window_size(width, height + max(0, chrome))
    browser.execute_script("window.scrollTo(0, 0)")
    wait(browser, 5).until(lambda driver: driver.execute_script("return window.scrollY") == 0)
    browser.save_screenshot(str(directory / name))


def run_report(arguments, out_dir, report):
    """The CLI's `--format html` report; exit 1 is expected when an attachment is not ready."""
    with open(report, "wb") as output:
        completed = subprocess.run([str(BINARY), "--allow-private-network", "--platforms", "ios,android",
                                    "--format", "html", "--out", str(out_dir), *arguments],
                                   stdout=output, stderr=subprocess.PIPE, timeout=120,
                                   env={**os.environ, "TMPDIR": str(out_dir)})
    assert completed.returncode in (0, 1), f"attach-fetch exit {completed.returncode}: {completed.stderr.decode()}"
    assert report.stat().st_size > 0, "the report is empty"


def open_offline(browser, path):
    """A file:// page with every network request refused."""
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["http://*", "https://*", "ws://*", "wss://*"]})
    browser.get(path.as_uri())


def ready_card(browser, service, url):
    """The one card of inspecting `url` on a fresh page, checked ready."""
    open_page(browser, service.base)
    inspect_url(browser, url)
    (card,) = wait_for_cards(browser, 1)
    assert status(card) == "ready"
    return card


# --- 1. a good JPEG -----------------------------------------------------------------------

def test_good_jpeg_is_ready_with_thumbnail_and_waterfall(browser, service, origin):
    card = ready_card(browser, service, origin.url("photo.jpg"))
    thumbnail = card.find_element(By.CSS_SELECTOR, ".ios-preview img.thumbnail")
    wait_image_loaded(browser, thumbnail)
    waterfall = card.find_element(By.CSS_SELECTOR, ".waterfall")
    assert waterfall.is_displayed()


# --- 2. a 404 and HTML posing as a JPEG ---------------------------------------------------

@pytest.mark.parametrize("name, words, code", [("missing.jpg", "404", "httpStatus"),
                                               ("fake.jpg", "HTML", "unsupportedType")])
def test_failures_are_explained(browser, service, origin, name, words, code):
    open_page(browser, service.base)
    inspect_url(browser, origin.url(name))
    (card,) = wait_for_cards(browser, 1)
    assert status(card) != "ready"
    sentence = card.find_element(By.CSS_SELECTOR, ".reason-sentence").text
    assert words in sentence, f".reason-sentence {sentence!r} does not mention {words}"
    assert card.find_element(By.CSS_SELECTOR, ".reason-code").text.strip() == code


# --- 3. a 14 MB JPEG ----------------------------------------------------------------------

def test_big_jpeg_is_reencoded(browser, service, origin):
    card = ready_card(browser, service, origin.url("big.jpg"))
    sentence = card.find_element(By.CSS_SELECTOR, ".reason-sentence").text
    assert "re-encoded" in sentence, f".reason-sentence {sentence!r} does not say re-encoded"
    assert "10 MB" in sentence or "10 MiB" in sentence, f".reason-sentence {sentence!r} names no 10 MB limit"


# --- 4. an FCM v1 message -----------------------------------------------------------------

def test_fcm_message_shows_both_platforms(browser, service, origin):
    photo = origin.url("photo.jpg")
    payload = {"message": {"token": "device-token",
                           "notification": {"title": "Flash sale", "body": "Half price until noon", "image": photo},
                           "android": {"notification": {"image": photo}},
                           "apns": {"payload": {"aps": {"mutable-content": 1}}, "fcm_options": {"image": photo}}}}
    open_page(browser, service.base)
    inspect_payload(browser, payload)
    found = wait_for_cards(browser, 1)
    assert all(status(card) == "ready" for card in found)
    for selector in (".platform-ios", ".platform-android"):
        shown = [e for e in browser.find_elements(By.CSS_SELECTOR, "#results " + selector) if visible_with_content(e)]
        assert shown, f"no visible {selector} with content"
    titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#results .notification-title")]
    bodies = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#results .notification-body")]
    assert "Flash sale" in titles, f".notification-title texts: {titles}"
    assert "Half price until noon" in bodies, f".notification-body texts: {bodies}"
    android = browser.find_elements(By.CSS_SELECTOR, "#results .android-preview img.android-image")
    assert android, "no img.android-image"
    wait_image_loaded(browser, android[0])


def test_portrait_photo_is_cut_to_2_to_1_for_android_and_ios_shows_the_square(browser, service, origin):
    # rotated.jpg is 500x1000 as displayed: Android's picture is its 2:1 crop, and the iOS
    # thumbnail shows the square chosen for it.
    card = ready_card(browser, service, origin.url("rotated.jpg"))
    android = card.find_elements(By.CSS_SELECTOR, ".android-preview img.android-image")
    assert android, "no img.android-image"
    wait_image_loaded(browser, android[0])
    width, height = browser.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", android[0])
    assert width == 2 * height, f"the Android picture is {width}x{height}, not 2:1"
    facts = card.find_element(By.CSS_SELECTOR, ".platform-android").text
    assert "2:1 around what matters" in facts, facts
    side = card.find_elements(By.CSS_SELECTOR, ".ios-preview img.thumbnail-side")
    assert side and side[0].get_attribute("data-clip"), "the iOS thumbnail does not show the chosen square"
    assert "%" in (side[0].value_of_css_property("object-position") or ""), side[0].value_of_css_property("object-position")


# --- 5. a video ---------------------------------------------------------------------------

def test_video_has_poster_and_android_shows_the_poster(browser, service, origin):
    card = ready_card(browser, service, origin.url("clip.mp4"))
    wait_image_loaded(browser, card.find_element(By.CSS_SELECTOR, "img.thumbnail"))
    # Android shows no video; its variant is the poster frame, a JPEG within 1 MB.
    android = card.find_elements(By.CSS_SELECTOR, ".android-preview img.android-image")
    assert android, "no img.android-image for the video's poster"
    wait_image_loaded(browser, android[0])
    assert not card.find_elements(By.CSS_SELECTOR, ".android-not-shown")


# --- 6. a deep link -----------------------------------------------------------------------

def test_deep_link_runs_without_a_click(browser, service, origin):
    browser.get(service.base + "/?url=" + urllib.parse.quote(origin.url("photo.jpg"), safe=""))
    (card,) = wait_for_cards(browser, 1)
    assert status(card) == "ready"
    assert browser.find_element(By.ID, "url").get_attribute("value") == origin.url("photo.jpg")
    wait_image_loaded(browser, card.find_element(By.CSS_SELECTOR, "img.thumbnail"))


# --- 7. XSS -------------------------------------------------------------------------------

def test_payload_text_is_never_markup(browser, service, origin):
    title = "<img src=x onerror=alert(1)>"
    open_page(browser, service.base)
    inspect_payload(browser, apns_payload(title, origin.url("photo.jpg")))
    (card,) = wait_for_cards(browser, 1)
    # By the time the thumbnail (fetched after the cards are drawn) is in, an <img src=x> would have failed.
    wait_image_loaded(browser, card.find_element(By.CSS_SELECTOR, "img.thumbnail"))
    try:
        alert = browser.switch_to.alert
        text = alert.text
        alert.dismiss()
        pytest.fail(f"an alert is open: {text!r}")
    except NoAlertPresentException:
        pass
    titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#results .notification-title")]
    assert title in titles, f".notification-title texts: {titles}"
    assert browser.find_elements(By.CSS_SELECTOR, 'img[src="x"]') == []

    second = '<img src=x onerror="window.__xss=1">'
    inspect_payload(browser, apns_payload(second, origin.url("photo.jpg") + "?second"))
    wait(browser).until(lambda driver: second in [e.text for e in driver.find_elements(
        By.CSS_SELECTOR, "#results .notification-title")])
    wait_for_cards(browser, 1)
    assert browser.execute_script("return typeof window.__xss") == "undefined"
    assert browser.find_elements(By.CSS_SELECTOR, 'img[src="x"]') == []


# --- 8. a token ---------------------------------------------------------------------------

def test_token_flow(browser, token_service, origin, console):
    # The browser's own console line for each 401 the test provokes on purpose.
    console.allow(r"/v1/\S+ - Failed to load resource: the server responded with a status of 401")
    open_page(browser, token_service.base)
    token_form = browser.find_element(By.ID, "token-form")
    message = browser.find_element(By.ID, "message")
    inspect_url(browser, origin.url("photo.jpg"))
    wait(browser).until(lambda driver: token_form.is_displayed())
    wait(browser).until(lambda driver: "token" in message.text.lower())
    assert cards(browser) == []

    asked = message.text
    set_field(browser, "token", "wrong-token")
    browser.find_element(By.ID, "token-save").click()
    # Refused again: the form still asks, with a message of its own, and no result.
    wait(browser).until(lambda driver: token_form.is_displayed() and message.text not in ("", asked)
                        and not message.text.startswith("Inspecting"))
    assert "token" in message.text.lower(), f"#message after a wrong token: {message.text!r}"
    assert cards(browser) == []

    set_field(browser, "token", token_service.token)
    browser.find_element(By.ID, "token-save").click()  # the inspection runs again by itself
    (card,) = wait_for_cards(browser, 1)
    assert status(card) == "ready"
    # The batch files need the token too: the thumbnail must still load.
    wait_image_loaded(browser, card.find_element(By.CSS_SELECTOR, "img.thumbnail"))
    assert browser.execute_script("return sessionStorage.getItem('attach-fetch-token')") == token_service.token
    assert browser.get_cookies() == []


# --- 9. accessibility ---------------------------------------------------------------------

@pytest.mark.parametrize("width", [1440, 360])
def test_accessibility(browser, service, origin, width, screenshot_dir):
    set_width(browser, width)
    open_page(browser, service.base)
    inspect_payload(browser, three_attachments(origin, f"width={width}"))
    found = wait_for_cards(browser, 3)
    assert [status(card) for card in found] == ["ready", "failed", "ready"]
    for image in browser.find_elements(By.CSS_SELECTOR, "#results img.thumbnail"):
        wait_image_loaded(browser, image)
    if width == 360:
        no_horizontal_scroll(browser)
    run_axe(browser)
    screenshot(browser, screenshot_dir, f"inspector-{width}.png")


# --- lint and the rewritten payload ------------------------------------------------------

def test_lint_findings_are_listed(browser, service, origin):
    payload = {"aps": {"alert": {"title": "No extension runs"}}, "image_url": origin.url("photo.jpg")}
    open_page(browser, service.base)
    inspect_payload(browser, payload)
    wait_for_cards(browser, 1)
    findings = browser.find_elements(By.CSS_SELECTOR, "#lint li.lint-finding")
    texts = [finding.text for finding in findings]
    assert any("missingMutableContent" in text for text in texts), f"#lint findings: {texts}"


def test_rewritten_payload_with_publishing(browser, publishing_service, origin):
    base = publishing_service.public_base
    photo = origin.url("photo.jpg?rewrite")
    payload = {"message": {"notification": {"title": "Published", "body": "From the public base", "image": photo},
                           "apns": {"payload": {"aps": {"mutable-content": 1}}, "fcm_options": {"image": photo}}}}
    open_page(browser, publishing_service.base)
    inspect_payload(browser, payload)
    (card,) = wait_for_cards(browser, 1)
    assert status(card) == "ready"
    rewritten = json.loads(browser.find_element(By.ID, "rewritten").text)
    message = rewritten["message"]
    for url in (message["notification"]["image"], message["apns"]["fcm_options"]["image"]):
        assert url.startswith(base), f"rewritten URL {url!r} is not under the public base {base!r}"
    thumbnail = card.find_element(By.CSS_SELECTOR, "img.thumbnail")
    wait_image_loaded(browser, thumbnail)
    assert thumbnail.get_attribute("src").startswith(base), "the thumbnail does not come from the public base"
    browser.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": publishing_service.base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    browser.find_element(By.ID, "copy-rewritten").click()
    feedback = browser.find_element(By.CSS_SELECTOR, "#copy-rewritten + .copy-status")
    wait(browser).until(lambda driver: feedback.text.strip() != "")
    assert feedback.text == "Copied.", f"copy feedback: {feedback.text!r}"
    copied = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "navigator.clipboard.readText().then(done, (e) => done('error: ' + e));")
    assert json.loads(copied) == rewritten


# --- 10. headers and markup ---------------------------------------------------------------

class _MarkupScan(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.inline_scripts = []
        self.module_scripts = []
        self.handlers = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        for name, _ in attrs:
            if name.lower().startswith("on"):
                self.handlers.append(f"<{tag} {name}>")
        if tag == "script":
            self._in_script = True
            self._script_has_src = any(name == "src" for name, _ in attrs)
            if ("type", "module") in attrs:
                self.module_scripts += [value for name, value in attrs if name == "src"]

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline_scripts.append(data.strip()[:80])


def test_security_headers_and_no_inline_script(service):
    with urllib.request.urlopen(service.base + "/", timeout=10) as response:
        assert response.status == 200
        headers = response.headers
        page = response.read().decode()
    csp = headers.get("Content-Security-Policy", "")
    for directive in ("default-src 'self'", "object-src 'none'", "frame-ancestors 'none'"):
        assert directive in csp, f"CSP {csp!r} lacks {directive}"
    assert "'unsafe-inline'" not in csp, f"CSP {csp!r} allows 'unsafe-inline'"
    assert headers.get("X-Content-Type-Options") == "nosniff"
    assert headers.get("Referrer-Policy") == "no-referrer"
    assert headers.get_content_type() == "text/html"
    scan = _MarkupScan()
    scan.feed(page)
    assert scan.inline_scripts == [], f"inline scripts: {scan.inline_scripts}"
    assert scan.handlers == [], f"event-handler attributes: {scan.handlers}"
    assert scan.module_scripts == ["inspector.js"], f"scripts: {scan.module_scripts}"
    # The stylesheet, the entry module and every module it imports, followed from their imports.
    assets, seen = [("/inspector.js", "text/javascript"), ("/inspector.css", "text/css")], set()
    while assets:
        asset, kind = assets.pop()
        if asset in seen:
            continue
        seen.add(asset)
        with urllib.request.urlopen(service.base + asset, timeout=10) as response:
            assert response.status == 200
            assert response.headers.get_content_type() == kind
            assert response.headers.get("X-Content-Type-Options") == "nosniff"
            if kind == "text/javascript":
                imported = re.findall(r"\bfrom '\./([a-z-]+\.js)';", response.read().decode())
                assets += [("/" + name, kind) for name in imported]
    assert len(seen) > 2, f"no module imported: {seen}"


# --- 11. the CLI's HTML report, offline ---------------------------------------------------

def test_html_report_works_offline(browser, make_origin, scratch):
    report_origin = make_origin()
    urls = [report_origin.url("photo.jpg"), report_origin.url("clip.mp4"), report_origin.url("missing.jpg")]
    out = scratch / "out"
    out.mkdir()
    report = scratch / "report.html"
    run_report(urls, out, report)
    report_origin.stop()  # nothing the report names may still be served
    open_offline(browser, report)
    found = wait_for_cards(browser, 3)
    assert [status(card) for card in found] == ["ready", "ready", "failed"]
    thumbnails = browser.find_elements(By.CSS_SELECTOR, "#results img.thumbnail")
    assert len(thumbnails) >= 2, f"{len(thumbnails)} thumbnails"
    for image in thumbnails:
        assert image.get_attribute("src").startswith("data:"), image.get_attribute("src")[:80]
        wait_image_loaded(browser, image)


# --- 12. twenty attachments ---------------------------------------------------------------

def test_report_of_twenty_attachments_fits_a_phone(browser, origin, scratch):
    out = scratch / "out"
    out.mkdir()
    report = scratch / "report.html"
    run_report([origin.url(f"photo.jpg?i={index}") for index in range(20)], out, report)
    set_width(browser, 360)
    open_offline(browser, report)
    found = wait_for_cards(browser, 20)
    assert all(status(card) == "ready" for card in found)
    no_horizontal_scroll(browser)


def test_page_with_twenty_attachments(browser, service, origin):
    payload = {"aps": {"alert": {"title": "Twenty", "body": "Twenty photos"}, "mutable-content": 1},
               "com.urbanairship.media_attachment": {"url": [origin.url(f"photo.jpg?n={i}") for i in range(20)]}}
    set_width(browser, 360)
    open_page(browser, service.base)
    inspect_payload(browser, payload)
    found = wait_for_cards(browser, 20)
    assert all(status(card) == "ready" for card in found)
    no_horizontal_scroll(browser)
