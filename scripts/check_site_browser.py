"""Open every page of a built documentation site in headless Chromium and report what fails.

Usage: ``python scripts/check_site_browser.py SITE_DIR [--screenshots DIR] [--chromium PATH]``
after ``mkdocs build --site-dir SITE_DIR``.

The site is served on 127.0.0.1 (an HTTP server on a free port, so that the search worker and
scripts run as on a real host) and each page is loaded in one headless Chromium, driven over
the DevTools protocol on a pipe (``--remote-debugging-pipe``), with the standard library
only: no driver, no browser download. A page fails on

- an error in the browser's console: an uncaught exception, ``console.error``, or a
  resource of the site that does not load;
- an image that does not load (``naturalWidth`` 0 once the page has loaded).

Requests to other hosts are not made: every host but 127.0.0.1 resolves to nothing, so the
check gives the same answer with or without a network, and a resource of another host that
fails to load (web fonts) is counted, not reported. ``--screenshots DIR`` saves a picture of
every page (1280 pixels wide, at most 16000 high) to look at.

The exit status is 1 when a page fails, 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from base64 import b64decode
from collections import deque
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH, HEIGHT, MAX_SCREENSHOT_HEIGHT = 1280, 900, 16000
PAGE_TIMEOUT = 30.0  # seconds for one page to load, its images included

# Once the page has loaded: wait for every image (lazy ones too), then give late scripts a
# moment to report; the broken images are those the browser could not decode or fetch.
BROKEN_IMAGES = """
(async () => {
  const images = [...document.images];
  images.forEach((image) => { image.loading = "eager"; });
  const settled = (image) => image.complete ? null : new Promise((done) => {
    image.addEventListener("load", done);
    image.addEventListener("error", done);
  });
  const deadline = new Promise((done) => setTimeout(done, 10000));
  await Promise.race([Promise.all(images.map(settled)), deadline]);
  await new Promise((done) => setTimeout(done, 300));
  return images
    .filter((image) => !image.complete || image.naturalWidth === 0)
    .map((image) => image.getAttribute("src"));
})()
"""


class DevToolsError(RuntimeError):
    """The browser answered a command with an error, closed the pipe, or did not answer."""


class Chromium:
    """One headless Chromium, driven over the DevTools protocol on fds 3 (in) and 4 (out)."""

    def __init__(self, executable: str, profile: Path, log: Path, local_host: str) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # Copies above the fds the child renumbers, so that neither dup2 overwrites the other.
        child_in = fcntl.fcntl(to_browser, fcntl.F_DUPFD_CLOEXEC, 10)
        child_out = fcntl.fcntl(from_browser, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_browser)
        os.close(from_browser)

        def pipes_as_fds_3_and_4() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        args = [
            executable,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--hide-scrollbars",
            "--mute-audio",
            "--no-first-run",
            "--no-default-browser-check",
            f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {local_host}",
            f"--user-data-dir={profile}",
            f"--window-size={WIDTH},{HEIGHT}",
            "about:blank",
        ]
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            close_fds=False,  # the pipes made inheritable as fds 3 and 4 must stay open
            preexec_fn=pipes_as_fds_3_and_4,
        )
        os.close(child_in)
        os.close(child_out)
        self._buffer = b""
        self._messages: deque[dict[str, Any]] = deque()
        self.events: list[dict[str, Any]] = []
        self._last_id = 0

    def close(self) -> None:
        with contextlib.suppress(DevToolsError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)
        self._log.close()

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = PAGE_TIMEOUT,
    ) -> dict[str, Any]:
        """Send one command and wait for its result; events read meanwhile are kept."""
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._write, data) :]
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline, method)
            if reply.get("id") == self._last_id:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, method: str, session: str, timeout: float = PAGE_TIMEOUT) -> None:
        """Wait for an event of the session, reading (and keeping) the others meanwhile."""
        deadline = time.monotonic() + timeout
        if any(e["method"] == method and e.get("sessionId") == session for e in self.events):
            return
        while True:
            event = self._next(deadline, method)
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return

    def _next(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while not self._messages:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DevToolsError(f"no answer from the browser to {waiting_for} in time")
            ready, _, _ = select.select([self._read], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise DevToolsError(f"the browser closed its pipe (waiting for {waiting_for})")
            *complete, self._buffer = (self._buffer + chunk).split(b"\0")
            self._messages.extend(json.loads(part) for part in complete)
        return self._messages.popleft()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, message: str, *args: Any) -> None:
        pass


def serve(site: Path) -> ThreadingHTTPServer:
    """The site served on 127.0.0.1, on a free port, from a daemon thread."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _console_errors(
    events: list[dict[str, Any]], session: str, origin: str
) -> tuple[list[str], int]:
    """The console errors of one page, and how many were failed loads from other hosts."""
    errors: list[str] = []
    external = 0
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            thrown = details.get("exception", {}).get("description") or details.get("text")
            errors.append(f"uncaught exception: {thrown}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            values = [
                str(arg.get("value", arg.get("description", arg.get("type"))))
                for arg in params.get("args", [])
            ]
            errors.append(f"console.{params['type']}: {' '.join(values)}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            url = entry.get("url", "")
            if entry.get("source") == "network" and url and not url.startswith(origin):
                external += 1
                continue
            errors.append(f"{entry['text']}{f' ({url})' if url else ''}")
    return errors, external


def check_page(
    browser: Chromium, url: str, origin: str, screenshot: Path | None
) -> tuple[list[str], int]:
    """Load one page in a new tab: its problems, and its failed loads from other hosts."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    try:
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable", session=session)
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        browser.events.clear()
        navigation = browser.send("Page.navigate", {"url": url}, session=session)
        if "errorText" in navigation:
            return [f"could not be opened: {navigation['errorText']}"], 0
        browser.wait_for("Page.loadEventFired", session)
        result = browser.send(
            "Runtime.evaluate",
            {"expression": BROKEN_IMAGES, "awaitPromise": True, "returnByValue": True},
            session=session,
        )
        problems = [f"image does not load: {src}" for src in result["result"].get("value", [])]
        if screenshot is not None:
            size = browser.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
            clip = {
                "x": 0,
                "y": 0,
                "width": WIDTH,
                "height": min(size["height"], MAX_SCREENSHOT_HEIGHT),
                "scale": 1,
            }
            shot = browser.send(
                "Page.captureScreenshot",
                {"format": "png", "clip": clip, "captureBeyondViewport": True},
                session=session,
            )
            screenshot.write_bytes(b64decode(shot["data"]))
        errors, external = _console_errors(browser.events, session, origin)
        return errors + problems, external
    finally:
        browser.send("Target.closeTarget", {"targetId": target})
        browser.events.clear()


def find_browser(name: str | None) -> str | None:
    for candidate in (name,) if name else BROWSERS:
        found = shutil.which(candidate)
        if found:
            return found
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("site", type=Path, help="the directory of the built site")
    parser.add_argument("--screenshots", type=Path, help="save a PNG of every page here")
    parser.add_argument("--chromium", help="the browser to run (default: chromium on PATH)")
    args = parser.parse_args(argv)
    site: Path = args.site
    if not (site / "index.html").is_file():
        parser.error(f"{site} has no index.html: build the site first")
    executable = find_browser(args.chromium)
    if executable is None:
        parser.error("no Chromium found: install Debian's chromium package, or pass --chromium")
    if args.screenshots is not None:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))

    failed = external = 0
    with tempfile.TemporaryDirectory(prefix="site-check-") as scratch:
        log = Path(scratch) / "chromium.log"
        browser = Chromium(executable, Path(scratch) / "profile", log, "127.0.0.1")
        server = serve(site)
        origin = f"http://127.0.0.1:{server.server_address[1]}/"
        try:
            version = browser.send("Browser.getVersion")["product"]
            for page in pages:
                shot = None
                if args.screenshots is not None:
                    shot = args.screenshots / page.replace("/", "__").replace(".html", ".png")
                problems, page_external = check_page(browser, origin + page, origin, shot)
                external += page_external
                for problem in problems:
                    print(f"{page}: {problem}")
                failed += bool(problems)
        except (DevToolsError, OSError) as error:
            print(f"browser check stopped: {error}", file=sys.stderr)
            print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
            return 1
        finally:
            server.shutdown()
            server.server_close()
            browser.close()

    note = f"; {external} loads from other hosts not made" if external else ""
    if failed:
        print(f"{failed} of {len(pages)} pages fail in {version}{note}", file=sys.stderr)
        return 1
    print(f"browser check: {len(pages)} pages load without errors in {version}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
