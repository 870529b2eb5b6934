"""What ``/init`` asks the agent: survey the repository and write (or improve) its AGENTS.md.

The agent writes the file with its own tools, so the usual approval shows the change first: as a
diff, because the create and edit tools preview their change as one.
"""

from __future__ import annotations

from pathlib import Path

FILE_NAME = "AGENTS.md"

_SURVEY = """First survey the repository; read, do not guess. List the top-level files and directories
(glob), read the README, the build and package files (pyproject.toml, package.json, Cargo.toml,
go.mod, Makefile, CI workflows, whichever exist) and a few typical source and test files. Find out
how the project is built, run and tested, how the code is laid out, and which conventions the code
already follows."""

_CONTENT = """Keep it short (under about 150 lines), concrete and specific to this repository; leave out
advice that would fit any project. Cover, where they apply:
- what the project is, in one or two sentences;
- setting up, building, running and testing it: the exact commands, and how to run a single test;
- the layout: the main directories and what belongs in each;
- conventions: formatting, linting, naming, typing and error handling, as the code does them;
- before finishing a change: what to run and check; files never to edit by hand (generated ones);
- anything surprising that would trip up a newcomer.
Write down only commands you have seen in the repository's own files. Change no other file. When
you are done, reply with two or three sentences on what the file covers."""


def init_prompt(workspace: Path) -> str:
    """The prompt for /init in `workspace`: create AGENTS.md, or improve the one there."""
    target = workspace / FILE_NAME
    if target.is_file():
        return (
            f"This repository already has an {FILE_NAME} at its root: the instructions a coding agent "
            "reads before working here. Improve it.\n\n"
            f"View {FILE_NAME} first. {_SURVEY} Then check what {FILE_NAME} says against what you "
            "found: commands that no longer work, directories that moved, missing build or test steps, "
            "vague rules that could be concrete.\n\n"
            f"Change {FILE_NAME} with the edit tool, one edit per change, keeping what is still right "
            f"and the author's structure and voice. {_CONTENT}"
        )
    legacy = workspace / "CLAUDE.md"
    source = " This repository has a CLAUDE.md: read it and carry over what is still true." if legacy.is_file() else ""
    return (
        f"Write an {FILE_NAME} for this repository: the instructions a coding agent (you, in a later "
        f"session) needs to work here well.{source}\n\n"
        f"{_SURVEY}\n\n"
        f"Then create {FILE_NAME} at the repository root with the create tool. {_CONTENT}"
    )
