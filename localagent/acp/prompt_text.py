"""An ACP prompt (content blocks) as the text of one user message.

Text blocks are the person's words. A resource the editor embedded (a file or selection it
attached) follows them as context, the way an ``@file`` mention does in the TUI; a resource link
is named by its path or URI, for the model to view. Images and audio are refused: the agent's
models read text.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

from tui.attachments import MAX_FILE_CHARS, MAX_TOTAL_CHARS, Attached, compose

_FILE_SCHEME = "file://"


def prompt_text(blocks: list[Any]) -> str:
    typed: list[str] = []
    attached: list[Attached] = []
    budget = MAX_TOTAL_CHARS
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
            # The same block and limits as an @file mention in the TUI.
            limit = min(MAX_FILE_CHARS, max(budget, 0))
            attached.append(Attached(_path(resource.uri), text[:limit], max(len(text) - limit, 0)))
            budget -= len(attached[-1].text)
        else:
            raise RequestError.invalid_params({"message": f"{kind} content is not supported; send text"})
    return compose(" ".join(part for part in typed if part), [], attached)


def _path(uri: str) -> str:
    return uri.removeprefix(_FILE_SCHEME)
