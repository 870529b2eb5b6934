"""``localagent monitor``: the metrics panel on its own, for whatever client uses the server."""
