#!/usr/bin/python3
"""The real-browser check of decodelab's HTML pages.

Opens each page in Debian's Chromium, driven by chromedriver through Debian's python3-selenium,
at each window width, and fails on what a reader would trip over:
  too-wide    an element wider than its container where the container does not scroll
  overlap     two SVG text boxes overlapping, or an SVG label cut off at the chart's edge
  bad-number  NaN, Infinity, undefined, nan or inf in the text or an attribute
  console     an error on the console or an uncaught exception in the page
  network     any request besides the page itself (pages must be self-contained)
and saves a full-page screenshot of each page at each width. The layout checks run inside the
page (page_problems.js); console errors and requests come from the browser's own logs
(chromedriver's goog:loggingPrefs "browser" and "performance"), and every request that would
leave the machine is blocked through the DevTools protocol, so a bad page cannot reach out.

Usage: check_pages.py [--browser PATH] [--driver PATH] [--widths 1024,1600] [--screenshots DIR]
                      [--root DIR] [--clip-height PX] [--expect KIND] PAGE.html...
--expect KIND turns the check around (a test of the test): exit 0 only when every page shows a
problem of that kind. Exit 2 on a usage error or when the browser cannot be started.
"""
import argparse
import base64
import json
import os
import pathlib
import shutil
import sys

KINDS = ("too-wide", "overlap", "bad-number", "console", "network")


def parse_arguments(argv):
    parser = argparse.ArgumentParser(prog="check_pages.py", description=__doc__.split("\n")[1])
    parser.add_argument("--browser", default=shutil.which("chromium") or shutil.which("chromium-browser") or "")
    parser.add_argument("--driver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    parser.add_argument("--widths", default="1024,1600")
    parser.add_argument("--screenshots", default="")
    parser.add_argument("--root", default="")
    parser.add_argument("--clip-height", type=int, default=0)
    parser.add_argument("--expect", default="", choices=("",) + KINDS)
    parser.add_argument("pages", nargs="+")
    options = parser.parse_args(argv)
    try:
        options.widths = [int(width) for width in options.widths.split(",")]
    except ValueError:
        parser.error(f"--widths: expected numbers such as 1024,1600, got {options.widths!r}")
    if any(width <= 0 for width in options.widths):
        parser.error(f"--widths: expected positive numbers, got {options.widths}")
    if not options.browser or not os.access(options.browser, os.X_OK):
        parser.error("--browser: no Chromium found (DECODELAB_SETUP_EXTRAS=browser scripts/setup.sh installs Debian's)")
    for page in options.pages:
        if not os.path.isfile(page):
            parser.error(f"{page}: no such page")
    return options


def start_browser(options):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chrome = webdriver.ChromeOptions()
    chrome.binary_location = options.browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                     "--font-render-hinting=none", "--disable-extensions"):
        chrome.add_argument(argument)
    chrome.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(options.driver), options=chrome)
    driver.execute_cdp_cmd("Network.enable", {})
    # Nothing a page asks for may leave the machine; what it asked for is still in the log.
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]})
    return driver


def log_problems(driver, url):
    """Console errors, exceptions and requests since the last call, from the browser's logs."""
    problems = []
    for entry in driver.get_log("browser"):
        if entry.get("level") != "SEVERE":
            continue
        source = entry.get("source", "")
        if source == "network":
            continue  # a failed request: reported once, from the performance log below
        what = "exception" if source == "javascript" else "console error"
        problems.append(("console", f"{what}: {entry.get('message', '')}"))
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.requestWillBeSent":
            continue
        requested = message["params"]["request"]["url"]
        if requested != url:
            problems.append(("network", f"requests {requested[:160]}"))
    return problems


def screenshot(driver, path, width, clip_height):
    height = driver.execute_script("return document.documentElement.scrollHeight")
    if clip_height > 0:
        height = min(clip_height, height)
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    pathlib.Path(path).write_bytes(base64.b64decode(shot["data"]))


def check(options, driver, script):
    failures = 0
    pages_with_expected = 0
    for file in options.pages:
        url = pathlib.Path(file).resolve().as_uri()
        relative = os.path.relpath(file, options.root) if options.root else file
        expected_seen = False
        for width in options.widths:
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})
            driver.get_log("browser")  # drop what an earlier page left in the logs
            driver.get_log("performance")
            driver.get(url)
            problems = [(problem["kind"], problem["what"]) for problem in driver.execute_script(f"return ({script})();")]
            problems = log_problems(driver, url) + problems
            if options.screenshots:
                name = relative[:-5] if relative.endswith(".html") else relative
                name = name.replace("/", "-").replace("\\", "-")
                screenshot(driver, os.path.join(options.screenshots, f"{name}-{width}.png"), width, options.clip_height)
            unique = list(dict.fromkeys(problems))
            if options.expect:
                expected = [what for kind, what in unique if kind == options.expect]
                expected_seen = expected_seen or bool(expected)
                for what in expected[:3]:
                    print(f"check-pages: {relative} at {width}px: found, as expected: {what}")
                continue
            for kind, what in unique[:12]:
                print(f"check-pages: FAIL {relative} at {width}px [{kind}]: {what}")
            if len(unique) > 12:
                print(f"check-pages: … and {len(unique) - 12} more problems on {relative} at {width}px")
            if unique:
                failures += 1
            else:
                print(f"check-pages: ok {relative} at {width}px")
        if options.expect:
            if expected_seen:
                pages_with_expected += 1
            else:
                print(f"check-pages: FAIL: {relative}: no {options.expect} problem found, but the page has one")
    if options.expect:
        return 0 if pages_with_expected == len(options.pages) else 1
    print(f"check-pages: {len(options.pages)} pages × {len(options.widths)} widths, {failures} failed")
    return 1 if failures else 0


def main(argv):
    options = parse_arguments(argv)
    try:
        import selenium  # noqa: F401  (Debian's python3-selenium)
    except ImportError as error:
        print(f"check-pages: error: python3-selenium cannot be imported ({error}); "
              "DECODELAB_SETUP_EXTRAS=browser scripts/setup.sh installs it", file=sys.stderr)
        return 2
    script = (pathlib.Path(__file__).parent / "page_problems.js").read_text(encoding="utf-8")
    if options.screenshots:
        os.makedirs(options.screenshots, exist_ok=True)
    try:
        driver = start_browser(options)
    except Exception as error:  # selenium's errors carry chromedriver's reason
        print(f"check-pages: error: the browser did not start: {str(error).strip()[:400]}", file=sys.stderr)
        return 2
    try:
        return check(options, driver, script)
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
