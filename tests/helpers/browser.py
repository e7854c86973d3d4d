"""Headless Chromium for the report's browser tests and benchmarks/corpus_map.py: the system's
Debian ``chromium`` driven by Playwright (no browser download), every request that is not a
``file:`` URL refused, so a page that needs the network fails visibly."""

from __future__ import annotations

import os
import shutil


def chromium_path():
    """The system's chromium, or None."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name) or (f"/usr/bin/{name}" if os.path.exists(f"/usr/bin/{name}") else None)
        if path:
            return path
    return None


def launch_options() -> dict:
    """Keyword arguments of Playwright's ``chromium.launch``: the system binary, no sandbox
    (we run as root), software WebGL, nothing in the background that reaches a network."""
    return {
        "executable_path": chromium_path(),
        "args": [
            "--no-sandbox",
            "--enable-unsafe-swiftshader",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
        ],
    }


def offline_page(browser, width=1200, height=900):
    """A new page whose requests other than ``file:`` URLs are aborted; returns
    ``(page, refused)`` where ``refused`` collects the URLs refused."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    refused = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    ctx.route("**/*", route)
    return ctx.new_page(), refused
