"""Running servers named on the bench's command line (``--base-url [NAME=]URL``), checked and
labelled; ``bench`` measures them as they are, ``bench --interleave`` replays sessions on one."""

from __future__ import annotations

from localagent.errors import UsageError
from localagent.urls import url_problem
from server.bench.client import Endpoint, normalize_base_url
from server.bench.runner import Target


def url_targets(entries: list[str], api_key: str | None) -> list[Target]:
    targets: list[Target] = []
    for entry in entries:
        name, sep, url = entry.partition("=")
        if not sep or "://" in name:
            name, url = "", entry
        base_url = normalize_base_url(url)
        if not base_url.startswith(("http://", "https://")) or url_problem(base_url):
            why = url_problem(base_url) or "is not an http:// or https:// URL"
            raise UsageError(f"--base-url {entry!r}: the URL {why}; give an http(s) URL, optionally as NAME=URL")
        targets.append(Target(label=name.strip() or base_url, endpoint=Endpoint(base_url, api_key)))
    return targets
