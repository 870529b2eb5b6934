"""The prompts a benchmark sends: the recipe's three coding prompts plus a prose prompt, or a file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from server.errors import BenchInputError
from server.profile_loading import first_error

PromptKind = Literal["code", "prose", "custom"]

PROMPT_SEPARATOR = "---"

PROMPTS_FILE_HELP = (
    "plain text with prompts separated by a line containing only '---', "
    'or a JSON list of strings or of {"name": ..., "prompt": ...} objects'
)


@dataclass(frozen=True)
class BenchPrompt:
    name: str
    text: str
    kind: PromptKind = "custom"


# The recipe's benchmark prompts, verbatim: changing a word changes what is measured.
DEFAULT_PROMPTS: tuple[BenchPrompt, ...] = (
    BenchPrompt(
        "task-store",
        "Write a complete Python task store module. Include a Task dataclass, TaskStatus enum, TaskStore "
        "class, add_task, update_task, delete_task, search_tasks, filter_by_status, export_to_json, "
        "get_all_tasks, and 5 tests. Return only one complete Python file.",
        "code",
    ),
    BenchPrompt(
        "kv-report",
        "Write a complete Python key-value report module. Include a KeyValueStore class, set, get, delete, "
        "exists, list_keys, filter_by_prefix, export_to_json, load_from_json, and a generate_report function "
        "that returns total keys, empty values, prefix counts, and largest value length. Include 5 tests. "
        "Return only one complete Python file.",
        "code",
    ),
    BenchPrompt(
        "linked-list",
        "Write a complete Python doubly linked list module. Include a Node dataclass, DoublyLinkedList class, "
        "append, prepend, delete, find, reverse, to_list, from_list, clear, and 5 tests. Return only one "
        "complete Python file.",
        "code",
    ),
    # Prose gains less from speculation than code; the recipe measured this one too (~95 tok/s).
    BenchPrompt(
        "moe-blog",
        "Write a blog post about Mixture of Experts in LLMs: what an expert is, how the router picks "
        "experts for each token, why it lets a model grow without growing the cost of each token, and "
        "the trade-offs in memory, training stability and serving.",
        "prose",
    ),
)

# A short, unrelated warm-up: it loads caches and kernels without priming the n-gram pool with
# the measured prompts' answers.
WARMUP_PROMPT = BenchPrompt("warm-up", "Say hello in one short sentence.", "custom")


class _PromptEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    prompt: str = Field(min_length=1)


def load_prompts(path: Path) -> tuple[BenchPrompt, ...]:
    """Read a prompts file (see PROMPTS_FILE_HELP). Any problem is a one-line BenchInputError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BenchInputError(f"--prompts {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchInputError(f"--prompts {path}: cannot read it ({exc})") from None
    stripped = text.strip()
    if path.suffix.lower() == ".json" or stripped.startswith("["):
        prompts = _from_json(path, stripped)
    else:
        prompts = _from_text(text)
    if not prompts:
        raise BenchInputError(f"--prompts {path}: the file has no prompts; write {PROMPTS_FILE_HELP}")
    names = [prompt.name for prompt in prompts]
    duplicate = next((name for name in names if names.count(name) > 1), None)
    if duplicate is not None:
        raise BenchInputError(f"--prompts {path}: the name {duplicate!r} is used twice; give each prompt its own")
    return prompts


def _from_text(text: str) -> tuple[BenchPrompt, ...]:
    chunks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == PROMPT_SEPARATOR:
            chunks.append([])
        else:
            chunks[-1].append(line)
    bodies = ["\n".join(chunk).strip() for chunk in chunks]
    return tuple(BenchPrompt(f"prompt-{i}", body) for i, body in enumerate((b for b in bodies if b), start=1))


def _from_json(path: Path, text: str) -> tuple[BenchPrompt, ...]:
    if not text:
        return ()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BenchInputError(f"--prompts {path}: not valid JSON ({exc}); write {PROMPTS_FILE_HELP}") from None
    if not isinstance(data, list):
        raise BenchInputError(f"--prompts {path}: the JSON is not a list; write {PROMPTS_FILE_HELP}")
    prompts: list[BenchPrompt] = []
    for i, item in enumerate(data, start=1):
        if isinstance(item, str):
            if item.strip():
                prompts.append(BenchPrompt(f"prompt-{i}", item.strip()))
            continue
        if not isinstance(item, dict):
            raise BenchInputError(
                f"--prompts {path}: item {i} is {type(item).__name__}, not a string or a "
                '{"name": ..., "prompt": ...} object'
            )
        try:
            entry = _PromptEntry.model_validate(item)
        except ValidationError as exc:
            raise BenchInputError(f"--prompts {path}: item {i}: {first_error(exc)}") from None
        prompts.append(BenchPrompt(entry.name or f"prompt-{i}", entry.prompt.strip()))
    return tuple(prompts)
