"""Fixtures of the inspector's browser tests: a media origin, the service, Chromium.

Everything listens on 127.0.0.1 only. Chromium runs headless with its network extras off, and
Selenium uses Debian's chromedriver (never Selenium Manager), with SE_AVOID_STATS set.
"""
import functools
import http.server
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import sys

import pytest

os.environ["SE_AVOID_STATS"] = "true"

from selenium import webdriver  # noqa: E402  (after SE_AVOID_STATS)
from selenium.webdriver.chrome.service import Service  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "PythonSupport"))
BINARY = ROOT / ".build" / "debug" / "attach-fetch"
MEDIA = ROOT / "TestMedia"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
TEN_MIB = 10 * 1024 * 1024

CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-sync", "--disable-default-apps",
    "--disable-component-update", "--disable-features=OptimizationHints,MediaRouter,Translate",
    "--metrics-recording-only", "--no-default-browser-check",
]


# --- the origin ---------------------------------------------------------------------------

from loopback_origin import Origin  # noqa: E402  (Tests/PythonSupport)


def _make_big_jpeg(path, work):
    """A noise JPEG of 12–16 MB (noise does not compress), made with libvips' command."""
    bands = []
    for seed in (1, 2, 3):
        band = work / f"noise{seed}.v"
        subprocess.run(["vips", "gaussnoise", str(band), "2600", "2000", "--mean", "128",
                        "--sigma", "60", "--seed", str(seed)], check=True)
        bands.append(str(band))
    subprocess.run(["vips", "bandjoin", " ".join(bands), str(work / "joined.v")], check=True)
    subprocess.run(["vips", "cast", str(work / "joined.v"), str(work / "rgb.v"), "uchar"], check=True)
    subprocess.run(["vips", "copy", str(work / "rgb.v"), f"{path}[Q=98]"], check=True)
    for scratch in work.glob("*.v"):
        scratch.unlink()


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("origin")
    shutil.copy(MEDIA / "photo.jpg", directory / "photo.jpg")
    shutil.copy(MEDIA / "clip.mp4", directory / "clip.mp4")
    shutil.copy(MEDIA / "rotated.jpg", directory / "rotated.jpg")
    shutil.copy(MEDIA / "error-page.html", directory / "fake.jpg")
    if shutil.which("vips") is None:
        pytest.fail("the vips command (libvips-tools) is needed to make big.jpg")
    _make_big_jpeg(directory / "big.jpg", tmp_path_factory.mktemp("vips"))
    size = (directory / "big.jpg").stat().st_size
    assert TEN_MIB < size < 40 * 1024 * 1024, f"big.jpg is {size} bytes, not between 10 and 40 MiB"
    return directory


@pytest.fixture(scope="session")
def origin(media_dir):
    server = Origin(media_dir)
    yield server
    server.stop()


@pytest.fixture
def make_origin(media_dir):
    """Origins a test may stop itself (the report's media must be gone when the report opens)."""
    started = []

    def make():
        server = Origin(media_dir)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


# --- the service --------------------------------------------------------------------------

class AttachFetchService:
    """`attach-fetch serve` on 127.0.0.1, port 0, with a TMPDIR of its own."""

    LISTENING = re.compile(r"attach-fetch: listening on http://127\.0\.0\.1:(\d+)")

    def __init__(self, work, extra=()):
        self.work = Path(work)
        tmp = self.work / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.work / "stderr.log"
        self._stderr = open(self.stderr_path, "wb")
        arguments = [str(BINARY), "serve", "--host", "127.0.0.1", "--port", "0", "--allow-private-network",
                     "--platforms", "ios,android", "--max-deadline", "25", *extra]
        self.process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=self._stderr, env={**os.environ, "TMPDIR": str(tmp)})
        self.port = self._wait_for_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def _wait_for_port(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            match = self.LISTENING.search(self.stderr_path.read_text(errors="replace"))
            if match:
                return int(match.group(1))
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"attach-fetch serve did not start:\n{self.stderr_path.read_text(errors='replace')}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()


def _require_binary():
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is missing: run swift build first")


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    _require_binary()
    running = AttachFetchService(tmp_path_factory.mktemp("service"))
    yield running
    running.stop()


TOKEN = "s3cret-token-for-the-inspector"


@pytest.fixture(scope="session")
def token_service(tmp_path_factory):
    _require_binary()
    work = tmp_path_factory.mktemp("token-service")
    tokens = work / "tokens"
    tokens.write_text("# the inspector's test token\n\n" + TOKEN + "\n")
    tokens.chmod(0o600)  # the service refuses a token file others can read
    running = AttachFetchService(work, extra=["--token-file", str(tokens)])
    running.token = TOKEN
    yield running
    running.stop()


@pytest.fixture(scope="session")
def publishing_service(tmp_path_factory):
    """A service that publishes into a directory a second origin serves: its public base."""
    _require_binary()
    work = tmp_path_factory.mktemp("publishing-service")
    published = work / "published"
    published.mkdir()
    media_origin = Origin(published)
    public_base = f"http://127.0.0.1:{media_origin.port}/"
    running = AttachFetchService(work, extra=["--publish-dir", str(published), "--public-base", public_base])
    running.public_base = public_base
    yield running
    running.stop()
    media_origin.stop()


# --- the browser --------------------------------------------------------------------------

@pytest.fixture(scope="session")
def driver():
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            pytest.fail(f"{path} is missing: scripts/install-deps.sh installs chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument("--window-size=1440,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An alert the page opens must stay open for the XSS test to see it.
    options.unhandled_prompt_behavior = "ignore"
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    browser.set_script_timeout(60)
    yield browser
    browser.quit()


class ConsoleAllowance:
    """Console entries a test expects (e.g. the browser's own line for a 401 it provoked)."""

    def __init__(self):
        self.patterns = []

    def allow(self, pattern):
        self.patterns.append(re.compile(pattern))

    def allowed(self, entry):
        return any(pattern.search(entry.get("message", "")) for pattern in self.patterns)


@pytest.fixture
def console():
    return ConsoleAllowance()


@pytest.fixture
def browser(driver, console):
    """The session's browser at 1440×1000 on a blank page, with no console error after the test."""
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(1440, 1000)
    driver.get("about:blank")
    driver.delete_all_cookies()
    driver.get_log("browser")  # drained: only this test's entries are checked
    yield driver
    try:
        driver.switch_to.alert.dismiss()
    except Exception:
        pass
    entries = driver.get_log("browser")
    severe = [entry for entry in entries if entry.get("level") == "SEVERE" and not console.allowed(entry)]
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    driver.execute_cdp_cmd("Network.disable", {})
    assert not severe, "console errors:\n" + "\n".join(f"  {e.get('source')}: {e.get('message')}" for e in severe)


@pytest.fixture(scope="session")
def screenshot_dir():
    directory = os.environ.get("ATTACH_FETCH_SCREENSHOTS")
    if not directory:
        return None
    path = Path(directory)
    if not path.is_absolute():
        path = ROOT / path
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def scratch():
    with tempfile.TemporaryDirectory(prefix="attach-fetch-browser-") as directory:
        yield Path(directory)
