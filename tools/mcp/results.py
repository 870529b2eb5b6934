"""Turn an MCP `CallToolResult` into the text the model sees.

Text blocks are joined; images, audio and resources become one line each (a local model cannot
look at them, but it should know they were there). Long text is cut to its head and tail and
the whole of it saved to a file whose path the model is given.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from tools.base import ToolResult
from tools.mcp.names import sanitise
from tools.output_truncation import MAX_OUTPUT_CHARS, MAX_OUTPUT_LINES, cut_middle


def render(result: CallToolResult) -> str:
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        # Some servers answer with structured content only.
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2, default=str))
    text = "\n".join(parts)
    if not text.strip():
        return "the tool reported an error without a message" if result.is_error else "(the tool returned no output)"
    return text


def to_tool_result(
    result: CallToolResult,
    *,
    server: str,
    tool: str,
    scratch_dir: Path,
    max_chars: int = MAX_OUTPUT_CHARS,
    max_lines: int = MAX_OUTPUT_LINES,
) -> ToolResult:
    text = render(result)
    metadata: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool}
    shortened = cut_middle(text, max_chars, max_lines)
    if shortened is not None:
        saved = _save(text, scratch_dir, f"mcp-{sanitise(server)}-{sanitise(tool)}")
        if saved is None:
            where = "the full result could not be saved"
        else:
            where = f"full result saved to {saved} (read it with bash: grep, sed -n, head)"
            metadata["full_output"] = str(saved)
        head = shortened.head if shortened.head.endswith("\n") else shortened.head + "\n"
        marker = f"[... {shortened.cut_lines} lines ({shortened.cut_chars} chars) cut from the middle; {where} ...]\n"
        text = head + marker + shortened.tail
    return ToolResult(output=text, is_error=bool(result.is_error), metadata=metadata)


def _block_text(block: Any) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}, {_size(_decoded_bytes(block.data))}]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}, {_size(_decoded_bytes(block.data))}]"
    if isinstance(block, EmbeddedResource):
        return _resource_line(block.resource)
    if isinstance(block, ResourceLink):
        about = (block.description or "").strip()
        described = f" - {about.splitlines()[0]}" if about else ""
        return f"[resource link: {block.name} <{block.uri}>{described}]"
    kind = getattr(block, "type", type(block).__name__)
    return f"[{kind} content]"


def _resource_line(resource: TextResourceContents | BlobResourceContents) -> str:
    mime = f", {resource.mime_type}" if resource.mime_type else ""
    if isinstance(resource, TextResourceContents):
        return f"[resource: {resource.uri}{mime}, {len(resource.text)} characters]"
    return f"[resource: {resource.uri}{mime}, {_size(_decoded_bytes(resource.blob))}]"


def _decoded_bytes(data: str) -> int:
    # Base64 length without decoding what can be megabytes of media.
    return len(data) * 3 // 4 - data.count("=", max(0, len(data) - 2))


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def _save(text: str, scratch_dir: Path, label: str) -> Path | None:
    try:
        scratch_dir.mkdir(parents=True, exist_ok=True)
        path = scratch_dir / f"{label}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}.txt"
        path.write_text(text, encoding="utf-8")
    except OSError:
        return None
    return path
