"""Approval of the MCP servers a repository's own `.mcp.json` declares.

Such a server runs a command the repository chose, so it starts only once the user has said
yes for this repository and this exact server list (a changed list asks again). Answers are
remembered in a small JSON file; the caller says where (tools/ knows no app paths).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.mcp.config import ServerConfig


@dataclass(frozen=True)
class ApprovalRequest:
    repo: Path
    config_file: Path
    servers: tuple[ServerConfig, ...]
    fingerprint: str

    def lines(self) -> list[str]:
        """Per server: its name, then everything it runs or sends (command, args, env, cwd, url,
        headers) as written in the file, so `${VAR}` secrets show as their names."""
        lines: list[str] = []
        for server in self.servers:
            lines.append(f"{server.name}:")
            lines += [f"  {line}" for line in server.disclosure()]
        return lines


# The TUI passes one of these to ask the person; True approves every listed server.
AskApproval = Callable[[ApprovalRequest], Awaitable[bool]]


def fingerprint(raw_servers: Mapping[str, Any]) -> str:
    canonical = json.dumps(raw_servers, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ApprovalStore:
    """Answers per repository, per kind of workspace file (``mcp`` for `.mcp.json`, ``config``
    for `.localagent.toml`), each tied to the exact content that was approved. The approved text
    is kept (where given) so a changed file can be shown as a diff against it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def _key(repo: Path, kind: str) -> str:
        return str(repo) if kind == "mcp" else f"{kind}:{repo}"

    def decision(self, repo: Path, digest: str, kind: str = "mcp") -> bool | None:
        """True or False when this repo's file was answered before with this content, else None."""
        entry = self._read().get(self._key(repo, kind))
        if not isinstance(entry, dict) or entry.get("fingerprint") != digest:
            return None
        approved = entry.get("approved")
        return approved if isinstance(approved, bool) else None

    def approved_content(self, repo: Path, kind: str) -> str | None:
        """The text last approved for this repository's file, to diff a changed file against."""
        entry = self._read().get(self._key(repo, kind))
        if isinstance(entry, dict) and entry.get("approved") is True and isinstance(entry.get("content"), str):
            return entry["content"]
        return None

    def remember(self, repo: Path, digest: str, approved: bool, kind: str = "mcp", content: str | None = None) -> None:
        data = self._read()
        entry: dict[str, Any] = {"fingerprint": digest, "approved": approved}
        if content is not None:
            entry["content"] = content
        data[self._key(repo, kind)] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole and renamed, so a crash never leaves half a file.
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".mcp-approvals-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            # A missing or unreadable store only means the user is asked again.
            return {}
        return data if isinstance(data, dict) else {}


async def approve_project_servers(
    servers: Sequence[ServerConfig],
    *,
    repo: Path,
    config_file: Path,
    raw_servers: Mapping[str, Any],
    store: ApprovalStore,
    trust: bool = False,
    ask: AskApproval | None = None,
) -> tuple[list[ServerConfig], list[str]]:
    """The servers allowed to start, and one-line notes about those held back."""
    project = tuple(s for s in servers if s.source == "project")
    if not project or trust:
        return list(servers), []
    digest = fingerprint(raw_servers)
    decided = store.decision(repo, digest)
    if decided is None and ask is not None:
        decided = bool(await ask(ApprovalRequest(repo, config_file, project, digest)))
        try:
            store.remember(repo, digest, decided)
        except OSError:
            pass  # the answer holds for this session; next time the user is asked again
    if decided:
        return list(servers), []
    names = ", ".join(s.name for s in project)
    why = "you declined them" if decided is False else "not approved for this repository yet"
    note = (
        f"skipped MCP servers from {config_file} ({names}): {why}; they run commands the repository chose. "
        "Approve them with `localagent mcp approve` or pass --trust-project-mcp"
    )
    return [s for s in servers if s.source != "project"], [note]
