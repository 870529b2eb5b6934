"""``localagent acp``: the agent over the Agent Client Protocol (JSON-RPC on stdio), for editors."""
