"""Record the two sample sessions under examples/bench/sessions/ (a script, not a test).

- ``scripted-build.jsonl``: the scripted model (tests/support/scripted_model.py, a real HTTP
  server that plays pre-written answers) drives ``localagent run`` through building a small
  package with tests in a temporary directory, over two turns: write the code and tests, run
  them, fix what fails, then add a command line. Its tool calls and their outputs are real.
- ``scripted-edits.jsonl``: the same package, then a longer edit-heavy turn in the way agents
  work on existing code: view a file, edit part of it (the edit copies lines the view showed),
  run the tests; over 30 requests, most of them edits of existing files.
- ``tiny-chat.jsonl``: the real tiny server (profile ``tiny``, Gemma 3 270M) answers four turns
  of questions about that package in read-only mode. A 270M model does not drive an agent; the
  session's value is that every request and its timings come from llama-server itself.

    .venv/bin/python scripts/record_sample_sessions.py [--only scripted|edits|tiny] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from localagent.paths import app_paths
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

ROOT = Path(__file__).resolve().parents[1]

COUNTING = '''"""Word statistics for plain text."""

from __future__ import annotations

import re
from collections import Counter

_WORD = re.compile(r"[A-Za-z']+")


def words(text: str) -> list[str]:
    """The words of `text`, in order."""
    return _WORD.findall(text)


def word_counts(text: str) -> Counter[str]:
    """How often each word occurs."""
    return Counter(words(text))


def top_words(text: str, n: int = 10) -> list[tuple[str, int]]:
    """The `n` most frequent words, most frequent first; ties in alphabetical order."""
    counts = word_counts(text)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
'''

TESTS = """import unittest

from textstats.counting import top_words, word_counts, words


class CountingTest(unittest.TestCase):
    def test_words_keeps_apostrophes(self):
        self.assertEqual(words("don't stop"), ["don't", "stop"])

    def test_counts_ignore_case(self):
        self.assertEqual(word_counts("The cat and the hat")["the"], 2)

    def test_top_words_orders_ties_alphabetically(self):
        self.assertEqual(top_words("b a b a c", 2), [("a", 2), ("b", 2)])


if __name__ == "__main__":
    unittest.main()
"""

MAIN = '''"""python -m textstats FILE [N]: the N most frequent words of FILE."""

from __future__ import annotations

import sys
from pathlib import Path

from textstats.counting import top_words


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m textstats FILE [N]", file=sys.stderr)
        return 2
    n = int(argv[1]) if len(argv) > 1 else 10
    for word, count in top_words(Path(argv[0]).read_text(encoding="utf-8"), n):
        print(f"{count:6d} {word}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
'''

RUN_TESTS = "python -m unittest discover -s tests -t . -q"


def call(name: str, **arguments: object) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, dict(arguments))])


def scripted_turns() -> tuple[list[ScriptedTurn], list[ScriptedTurn]]:
    first = [
        call("glob", pattern="**/*"),
        call("create", path="textstats/__init__.py", content='"""Word statistics for plain text."""\n'),
        call("create", path="textstats/counting.py", content=COUNTING),
        call("create", path="tests/__init__.py", content=""),
        call("create", path="tests/test_counting.py", content=TESTS),
        call("bash", command=RUN_TESTS),
        call("view", path="textstats/counting.py"),
        call(
            "edit",
            path="textstats/counting.py",
            old_string="    return _WORD.findall(text)",
            new_string="    return [w.lower() for w in _WORD.findall(text)]",
        ),
        call(
            "edit",
            path="textstats/counting.py",
            old_string='"""The words of `text`, in order."""',
            new_string='"""The words of `text`, lower-cased, in order."""',
        ),
        call("bash", command=RUN_TESTS),
        ScriptedTurn(
            text=(
                "Created `textstats` with `words`, `word_counts` and `top_words` in `textstats/counting.py`, and three "
                'tests in `tests/test_counting.py`. The first run failed `test_counts_ignore_case` ("The" and "the" '
                "were counted apart); `words` now lower-cases, and all three tests pass."
            )
        ),
    ]
    second = [
        call("view", path="tests/test_counting.py"),
        call("create", path="textstats/__main__.py", content=MAIN),
        call(
            "edit",
            path="tests/test_counting.py",
            old_string='\n\nif __name__ == "__main__":',
            new_string=(
                "\n\n    def test_main_prints_counts(self):\n        import io, contextlib, tempfile, os\n"
                "        from textstats.__main__ import main\n        with tempfile.NamedTemporaryFile('w', delete=False) as f:\n"
                "            f.write('a b a')\n        out = io.StringIO()\n        with contextlib.redirect_stdout(out):\n"
                "            self.assertEqual(main([f.name, '1']), 0)\n        os.unlink(f.name)\n"
                "        self.assertEqual(out.getvalue().split(), ['2', 'a'])\n\n\nif __name__ == \"__main__\":"
            ),
        ),
        call("bash", command=RUN_TESTS),
        call("bash", command="printf 'to be or not to be\\n' > /tmp/sample.txt; python -m textstats /tmp/sample.txt 3"),
        ScriptedTurn(
            text=(
                "Added `python -m textstats FILE [N]` in `textstats/__main__.py`, printing the N most frequent words with "
                "their counts, and a test for it; the four tests pass. `python -m textstats sample.txt 3` prints `2 be`, "
                "`2 to`, `1 not`."
            )
        ),
    ]
    return first, second


# (old, new) pairs applied to counting.py one edit at a time, each after viewing the file: the
# renames and docstring changes of a tidy-up, so that each edit's old_string is text just read.
EDITS = (
    (
        '"""The words of `text`, lower-cased, in order."""',
        '"""The words of `text`, lower-cased, in the order they appear."""',
    ),
    ('"""How often each word occurs."""', '"""How often each word occurs, counted case-insensitively."""'),
    ("return Counter(words(text))", "return Counter(word for word in words(text) if word)"),
    ("def top_words(text: str, n: int = 10)", "def top_words(text: str, n: int = 10, *, min_count: int = 1)"),
    (
        "    counts = word_counts(text)\n",
        "    counts = {word: count for word, count in word_counts(text).items() if count >= min_count}\n",
    ),
    ('_WORD = re.compile(r"[A-Za-z\']+")', '_WORD = re.compile(r"[A-Za-z\'-]+")'),
    (
        '"""Word statistics for plain text."""',
        '"""Word statistics for plain text: words, counts, the most frequent."""',
    ),
)


def edit_turns() -> list[ScriptedTurn]:
    turns: list[ScriptedTurn] = [call("glob", pattern="textstats/*.py")]
    for old, new in EDITS:
        turns += [
            call("view", path="textstats/counting.py"),
            call("edit", path="textstats/counting.py", old_string=old, new_string=new),
            call("grep", pattern=re.findall(r"[A-Za-z_]{4,}", new)[0], path="textstats"),
            call("bash", command=RUN_TESTS),
        ]
    turns += [
        call("view", path="tests/test_counting.py"),
        call(
            "edit",
            path="tests/test_counting.py",
            old_string="    def test_counts_ignore_case(self):",
            new_string="    def test_min_count_drops_rare_words(self):\n"
            '        self.assertEqual(top_words("a a b", min_count=2), [("a", 2)])\n\n'
            "    def test_counts_ignore_case(self):",
        ),
        call("bash", command=RUN_TESTS),
        ScriptedTurn(
            text="Tidied counting.py in seven edits (docstrings, case-insensitive counts, min_count) and "
            "added a test for min_count; the tests pass."
        ),
    ]
    return turns


TINY_PROMPTS = (
    "What does a word frequency counter do? Answer in two sentences.",
    "Write a Python function that returns the three most common words of a string.",
    "How would you test that function? Give one unittest test case.",
    "Explain what collections.Counter.most_common returns.",
)


def run_agent(args: list[str], workspace: Path, home: Path) -> None:
    # A fresh home for the sessions, the usual cache for the built server and the models.
    env = dict(os.environ, LOCALAGENT_HOME=str(home), LOCALAGENT_CACHE_DIR=str(app_paths().cache))
    command = [sys.executable, "-m", "localagent.cli", "run", *args]
    done = subprocess.run(
        command,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"localagent run {args[0]!r} exited {done.returncode}:\n{done.stderr[-2000:]}")


def newest_session(home: Path) -> Path:
    sessions = sorted((home / "data" / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    if not sessions:
        found = sorted(home.rglob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
        if not found:
            raise SystemExit(f"no session file under {home}")
        return found[-1]
    return sessions[-1]


BUILD_PROMPT = "Create a small Python package textstats that counts words, with unittest tests, and make them pass."


def record_two_turns(out: Path, second_prompt: str, second: list[ScriptedTurn]) -> Path:
    """The package built in a first turn, then ``second_prompt`` answered by ``second``, on the
    scripted model in full-auto mode; the session file is copied to ``out``."""
    home, workspace = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp(prefix="textstats-"))
    first, _ = scripted_turns()
    with ScriptedModelServer(first) as model:
        for prompt, turns, resume in ((BUILD_PROMPT, [], []), (second_prompt, second, ["-c"])):
            model.add_turns(*turns)
            run_agent([prompt, "--base-url", model.base_url, "--mode", "full-auto", *resume], workspace, home)
    shutil.copyfile(newest_session(home), out)
    return out


def record_scripted(out: Path) -> None:
    _, second = scripted_turns()
    prompt = "Add a command line: python -m textstats FILE [N] prints the N most common words. Test it."
    record_two_turns(out / "scripted-build.jsonl", prompt, second)


def record_edits(out: Path) -> None:
    prompt = (
        "Tidy up textstats/counting.py: clearer docstrings, case-insensitive counts, a min_count option. "
        "Keep the tests passing."
    )
    record_two_turns(out / "scripted-edits.jsonl", prompt, edit_turns())


def record_tiny(out: Path) -> None:
    home, workspace = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp(prefix="textstats-"))
    (workspace / "README.md").write_text("textstats: word statistics for plain text.\n")
    for i, prompt in enumerate(TINY_PROMPTS):
        run_agent(
            [prompt, "--profile", "tiny", "--mode", "read-only", "--max-turns", "3", *(["-c"] if i else [])],
            workspace,
            home,
        )
    shutil.copyfile(newest_session(home), out / "tiny-chat.jsonl")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("scripted", "edits", "tiny"))
    parser.add_argument("--out", type=Path, default=ROOT / "examples" / "bench" / "sessions")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "scripted"):
        record_scripted(args.out)
    if args.only in (None, "edits"):
        record_edits(args.out)
    if args.only in (None, "tiny"):
        record_tiny(args.out)
    print(f"sessions in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
