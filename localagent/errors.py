"""Errors the CLI reports as one line, with the exit code it uses."""

from __future__ import annotations


class LocalAgentError(Exception):
    exit_code = 1


class ConfigError(LocalAgentError):
    """A configuration file or variable is invalid."""

    exit_code = 2


class UsageError(LocalAgentError):
    """Bad input on the command line."""

    exit_code = 2
