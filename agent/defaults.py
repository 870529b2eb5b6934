"""The agent loop's defaults, each named once: ``agent.loop.AgentConfig`` and the settings
(``localagent.config``) both read them here."""

# Model requests in one turn before it stops with "max_turns".
MAX_STEPS = 50
# Compact the history when the prompt fills this share of the context.
COMPACT_THRESHOLD = 0.8
