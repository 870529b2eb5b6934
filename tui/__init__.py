"""The Textual front end of localagent.

It only consumes the agent's typed event stream and the server's status and telemetry; nothing
under ``agent/`` or ``server/`` imports this package.
"""
