"""Print the ACP messages of one session with `localagent acp` (a demonstration, not a test).

The model is scripted (tests/support/scripted_model.py, a real HTTP server): it views a file,
edits it (the person allows it once) and answers. Every JSON-RPC message between this client and
the agent is printed, shortened, in order.

    .venv/bin/python scripts/acp_transcript.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation

from localagent.paths import app_paths
from tests.support.acp_client import RecordingClient
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

WIDTH = 220


def show(event: object) -> None:
    arrow = "->" if getattr(event, "direction", None) and event.direction.value == "outgoing" else "<-"
    text = json.dumps(event.message, ensure_ascii=False)  # type: ignore[attr-defined]  # only message events are printed
    print(f"{arrow} {text[:WIDTH]}{' …' if len(text) > WIDTH else ''}")


async def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="acp-demo-"))
    (work / "app.py").write_text("def add(a, b):\n    return a - b\n")
    env = dict(os.environ, LOCALAGENT_HOME=tempfile.mkdtemp(), LOCALAGENT_CACHE_DIR=str(app_paths().cache))
    turns = [
        ScriptedTurn(reasoning="The sign is wrong.", tool_calls=[ScriptedToolCall("view", {"path": "app.py"})]),
        ScriptedTurn(
            tool_calls=[ScriptedToolCall("edit", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"})]
        ),
        ScriptedTurn(text="Fixed: add() adds now."),
    ]
    with ScriptedModelServer(turns, speculative=True) as model:
        async with spawn_agent_process(
            RecordingClient(answers=["once"]),
            sys.executable,
            "-m",
            "localagent.cli",
            "acp",
            "--base-url",
            model.base_url,
            env=env,
            cwd=str(work),
            transport_kwargs={"stderr": None},
            observers=[show],
        ) as (conn, _process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="transcript", version="1"),
            )
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text_block("fix add() in app.py")])


if __name__ == "__main__":
    asyncio.run(main())
