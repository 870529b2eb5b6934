"""The tools' defaults, each named once: the tools and the settings (``localagent.config``) both
read them here."""

# A bash command that names no timeout of its own is stopped after this long.
BASH_TIMEOUT_SECONDS = 120.0
