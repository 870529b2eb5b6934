"""Text that reads as a chat template's control token, kept from acting as one.

llama-server renders the history through the model's template and tokenizes the result with
special tokens parsed. A file, a command's output, an MCP answer or an AGENTS.md that contains
``<turn|>`` (Gemma 4), ``<end_of_turn>`` (Gemma 2/3) or ``<|im_end|>`` (ChatML) would therefore
close the turn for real, and what follows would read to the model as a new turn of the user's or
of its own: a repository could speak with the user's voice.

Every message is defanged once, as it enters the history (``agent.loop``): a WORD JOINER (U+2060,
invisible, no width) goes after the ``<`` of anything shaped like a control token, so the
tokenizer sees text. What the model copies back into a tool call's arguments has it taken out
again (``restored``), so an edit of a file that holds such text still matches the file.
"""

from __future__ import annotations

import re
from typing import Any

from agent.json_values import map_strings

WORD_JOINER = "\u2060"
# After "<": the pipe-marked families (<|im_end|>, <|turn>, <turn|>, <|"|>, <|eot_id|>) and
# Gemma's named turn markers. HTML such as <div> or <s> is left as it is.
_CONTROL_SHAPE = re.compile(
    r"<(?=\|[^\s<>]{0,32}>|[^\s<>|\u2060]{1,32}\|>|(?:start|end)_of_(?:turn|image)>|(?:bos|eos)>)"
)
_JOINED = "<" + WORD_JOINER


def defanged_text(text: str) -> str:
    """``text`` with every control-token shape broken by a word joiner."""
    return _CONTROL_SHAPE.sub(_JOINED, text) if "<" in text else text


def defanged(value: Any) -> Any:
    """``value`` with every control-token shape in its strings broken by a word joiner."""
    return map_strings(value, defanged_text)


def restored(value: Any) -> Any:
    """``value`` with the word joiners ``defanged`` put in taken out again."""
    return map_strings(value, lambda text: text.replace(_JOINED, "<"))
