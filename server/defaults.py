"""The server's defaults, each named once: the code that uses them and the settings
(``localagent.config``) both read them here."""

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8910
DEFAULT_PROFILE = "tiny"
# How long a llama-server may take to load its model and answer /health.
STARTUP_TIMEOUT_S = 300.0
