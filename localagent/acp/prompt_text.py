"""An ACP prompt (content blocks) as the text of one user message.

Text blocks are the person's words. A resource the editor embedded (a file or selection it
attached) follows them as context, the way an ``@file`` mention does in the TUI; a resource link
is named by its path or URI, for the model to view. Images and audio are refused: the agent's
models read text.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

from tui.attachments import CONTEXT_MARK, MAX_FILE_CHARS

_FILE_SCHEME = "file://"


def prompt_text(blocks: list[Any]) -> str:
    typed: list[str] = []
    attached: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            typed.append(block.text)
        elif kind == "resource_link":
            typed.append(_path(block.uri))
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is None:
                raise RequestError.invalid_params({"message": f"{resource.uri}: only text resources can be attached"})
            attached.append(_file_block(_path(resource.uri), text))
        else:
            raise RequestError.invalid_params({"message": f"{kind} content is not supported; send text"})
    message = " ".join(part for part in typed if part)
    if not attached:
        return message
    return "\n\n".join([message, CONTEXT_MARK, *attached])


def _path(uri: str) -> str:
    return uri.removeprefix(_FILE_SCHEME)


def _file_block(name: str, text: str) -> str:
    cut = len(text) - MAX_FILE_CHARS
    body = text[:MAX_FILE_CHARS] if cut > 0 else text
    fence = "`" * max(3, max((len(run) for run in body.split("\n") if set(run) == {"`"}), default=0) + 1)
    block = f"File {name} (as the editor has it now):\n{fence}\n{body.rstrip(chr(10))}\n{fence}"
    if cut > 0:
        block += f"\n[... {cut} more characters not attached; view {name} to read the rest]"
    return block
