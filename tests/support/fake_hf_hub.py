"""A tiny Hugging Face Hub of our own: the few endpoints huggingface_hub calls to list a model
repository's files and download one, served over real HTTP from the standard library.

- ``GET /api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}``: ``HfApi.model_info``
  (``sha`` and ``siblings``);
- ``GET /api/models/{repo}/tree/{rev}``: ``HfApi.list_repo_tree`` / ``list_repo_files``;
- ``HEAD`` / ``GET /{repo}/resolve/{rev}/{path}``: ``hf_hub_download``'s metadata call (it reads
  ``X-Repo-Commit``, ``ETag`` and ``Content-Length``) and the download itself.

Point huggingface_hub at it with ``HF_ENDPOINT=fake.url``. Every request is recorded, so a test
can tell a download from a cache hit.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def gguf_bytes(path: str) -> bytes:
    """Tiny stand-in content, different for every file."""
    return b"GGUF\x03\x00\x00\x00" + path.encode()


@dataclass
class FakeHub:
    repos: dict[str, list[str]]  # repo id -> the paths of its files
    commit: str = COMMIT
    requests: list[tuple[str, str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            fake = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving; the port then refuses connections. Safe to call twice."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def downloads(self) -> list[str]:
        """The file paths fetched with GET (HEAD calls and listings not counted)."""
        return [path for method, path in self.requests if method == "GET" and "/resolve/" in path]

    def listings(self) -> int:
        return sum(1 for _method, path in self.requests if path.startswith("/api/models/"))


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    def end_headers(self) -> None:
        # One request per connection: once the hub is stopped, no kept-alive socket still answers.
        self.send_header("Connection", "close")
        self.close_connection = True
        super().end_headers()

    def do_HEAD(self) -> None:
        self._route(body=False)

    def do_GET(self) -> None:
        self._route(body=True)

    def _route(self, *, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        self.fake.requests.append((self.command, path))
        if path.startswith("/api/models/"):
            self._api(path.removeprefix("/api/models/"))
            return
        owner, _, rest = path.lstrip("/").partition("/")
        name, _, rest = rest.partition("/")
        kind, _, rest = rest.partition("/")
        revision, _, file_path = rest.partition("/")
        if kind != "resolve":
            self._error(404, "RepoNotFound")
            return
        self._resolve(f"{owner}/{name}", revision, file_path, body=body)

    def _api(self, rest: str) -> None:
        parts = rest.split("/")
        repo = "/".join(parts[:2])
        if repo not in self.fake.repos:
            self._error(404, "RepoNotFound")
            return
        files = self.fake.repos[repo]
        if len(parts) > 2 and parts[2] == "tree":
            tree = [_tree_entry(path) for path in files]
            self._json(tree)
            return
        siblings = [{"rfilename": path} for path in files]
        self._json({"id": repo, "modelId": repo, "sha": self.fake.commit, "siblings": siblings})

    def _resolve(self, repo: str, revision: str, file_path: str, *, body: bool) -> None:
        if repo not in self.fake.repos:
            self._error(404, "RepoNotFound")
            return
        if revision not in ("main", self.fake.commit):
            self._error(404, "RevisionNotFound")
            return
        if file_path not in self.fake.repos[repo]:
            self._error(404, "EntryNotFound")
            return
        content = gguf_bytes(file_path)
        start = _range_start(self.headers.get("Range"))
        self.send_response(206 if start else 200)
        self.send_header("X-Repo-Commit", self.fake.commit)
        self.send_header("ETag", f'"{hashlib.sha256(content).hexdigest()}"')
        self.send_header("Accept-Ranges", "bytes")
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        self.send_header("Content-Length", str(len(content) - start))
        self.end_headers()
        if body:
            self.wfile.write(content[start:])

    def _json(self, data: object) -> None:
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Repo-Commit", self.fake.commit)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(payload)

    def _error(self, status: int, code: str) -> None:
        payload = json.dumps({"error": code}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", code)
        self.send_header("X-Repo-Commit", self.fake.commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(payload)


def _tree_entry(path: str) -> dict[str, object]:
    content = gguf_bytes(path)
    return {"type": "file", "path": path, "size": len(content), "oid": hashlib.sha1(content).hexdigest()}


def _range_start(header: str | None) -> int:
    if not header or not header.startswith("bytes="):
        return 0
    start, _, _end = header.removeprefix("bytes=").partition("-")
    return int(start) if start.isdigit() else 0
