"""``localagent launch``: Claude Code, Codex or opencode on a server localagent manages.

One job per module: the agents and their settings (``agents``), whether one is installed
(``installed``), the server (``local_server``), the proxy that counts an agent's requests
(``request_meter``, with ``wire_protocols``, ``usage_reading`` and ``minimal_replies``), the
measured prompt and its cache (``prompt_measure``, ``prompt_cache``), the context check
(``context_check``), running the agent (``agent_run``) and the command (``command``).
"""
