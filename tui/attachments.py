"""What a prompt carries besides the typed text: ``@file`` mentions and ``!command`` outputs.

The conversation shows what the person typed; the model gets that text and, after one marker
line, the context: the output of shell commands they ran since their last message (oldest
first), then the mentioned files. ``typed_part`` takes the context off again (a resumed
session shows and recalls the prompts as they were typed).

A mention is ``@path`` (or ``@"a path"``) after a space or at the start of a line. The path is
resolved the way the file tools resolve one (``tools.workspace_paths``): outside the workspace,
or through a symlink out of it, is refused, and so is a file that cannot be read as text; the
prompt is then not sent. A mention that names no file (``@property``, ``@someone``) stays text.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path

from agent.prompt import without_context
from tools.base import ToolError
from tools.file_listing import inside_git_dir
from tools.output_truncation import cut_middle
from tools.text_files import TextFile
from tools.workspace_paths import display_path, resolve_in_workspace

CONTEXT_MARK = "--- context the user attached to this message ---"
# Per file, and for all files of one prompt together: a small model's context is small.
MAX_FILE_CHARS = 16_000
MAX_TOTAL_CHARS = 48_000
# What of a shell command's output goes to the model (the conversation shows all of it).
MAX_SHELL_CHARS = 8_000
MAX_SHELL_LINES = 200

_MENTION = re.compile(r'(?<!\S)@(?:"([^"\n]+)"|([^\s"]+))')
_TRAILING = ".,;:!?)]}'"


@dataclass
class Attached:
    shown: str  # workspace-relative POSIX path
    text: str
    omitted_chars: int = 0


@dataclass
class Expansion:
    """What the mentions in one prompt came to."""

    files: list[Attached] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # one reason each; the prompt is not sent
    as_text: list[str] = field(default_factory=list)  # mentions that name no file


def mentions(text: str) -> list[str]:
    """The mentioned paths, in order, each once."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        raw = match.group(1) or match.group(2)
        if raw and raw not in found:
            found.append(raw)
    return found


def mention_for(path: str) -> str:
    """How the picker writes a chosen path into the prompt."""
    return f'@"{path}"' if any(ch.isspace() for ch in path) else f"@{path}"


def _resolve(raw: str, workspace: Path) -> Path | None:
    """The file a mention names, None when it names none; ToolError when it must be refused."""
    for candidate in dict.fromkeys((raw, raw.rstrip(_TRAILING))):
        if not candidate:
            continue
        path = resolve_in_workspace(candidate, workspace)
        if path.exists():
            if inside_git_dir(path, workspace.resolve()):
                raise ToolError(f"@{candidate} is inside .git, git's own data")
            return path if path.is_file() else None
    return None


def _read(path: Path, shown: str, budget: int) -> Attached:
    text = TextFile.load(path, shown).text
    limit = min(MAX_FILE_CHARS, budget)
    if len(text) <= limit:
        return Attached(shown, text)
    return Attached(shown, text[:limit], len(text) - limit)


def _expand_sync(text: str, workspace: Path) -> Expansion:
    result = Expansion()
    budget = MAX_TOTAL_CHARS
    for raw in mentions(text):
        try:
            path = _resolve(raw, workspace)
            if path is None:
                result.as_text.append(raw)
                continue
            shown = display_path(path, workspace)
            if any(item.shown == shown for item in result.files):
                continue
            item = _read(path, shown, budget)
        except ToolError as exc:
            result.refused.append(str(exc))
            continue
        except OSError as exc:
            result.refused.append(f"cannot read @{raw}: {exc.strerror or exc}")
            continue
        budget -= len(item.text)
        result.files.append(item)
    return result


async def expand(text: str, workspace: Path) -> Expansion:
    """Read the files `text` mentions (off the event loop: a file may be large)."""
    return await asyncio.to_thread(_expand_sync, text, workspace)


def _fence(body: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


def file_block(item: Attached) -> str:
    fence = _fence(item.text)
    body = item.text if item.text.endswith("\n") or not item.text else item.text + "\n"
    block = f"File {item.shown} (its content as it is now; no need to view it again):\n{fence}\n{body}{fence}"
    if item.omitted_chars:
        block += f"\n[... {item.omitted_chars} more characters not attached; view {item.shown} to read the rest]"
    return block


def shell_note(command: str, output: str) -> str:
    """A command the person ran and its output (with its exit code line), for the model."""
    shortened = cut_middle(output, MAX_SHELL_CHARS, MAX_SHELL_LINES)
    if shortened is not None:
        output = f"{shortened.head}\n[... {shortened.cut_lines} lines cut ...]\n{shortened.tail}"
    fence = _fence(output)
    body = output if output.endswith("\n") else output + "\n"
    return f"The user ran this shell command themselves (not you): {command}\n{fence}\n{body}{fence}"


def compose(typed: str, notes: list[str], files: list[Attached]) -> str:
    """The message the model gets; just `typed` when there is nothing to add."""
    blocks = [*notes, *(file_block(item) for item in files)]
    if not blocks:
        return typed
    return "\n\n".join([typed, CONTEXT_MARK, *blocks])


def typed_part(content: str) -> str:
    """The text as the person typed it, without the context ``compose`` added (nor the
    session's own, agent.prompt.session_context)."""
    text = without_context(content)
    head, mark, _ = text.partition("\n\n" + CONTEXT_MARK + "\n\n")
    return head if mark else text
