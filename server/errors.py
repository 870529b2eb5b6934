"""Errors of the server layer. Each message is written for a person and says what to do."""

from __future__ import annotations


class ServerError(Exception):
    """Base class: anything that goes wrong with getting or running llama-server."""


class BinaryError(ServerError):
    """No usable llama-server binary."""


class NothingBuiltError(BinaryError):
    """None was named (config, environment) and none built here or on PATH can be used."""


class BuildError(ServerError):
    """Building llama-server failed."""


class ProfileError(ServerError):
    """A profile is invalid or cannot be mapped onto the binary at hand."""


class ModelError(ServerError):
    """A model file is missing or cannot be fetched."""


class PortError(ServerError):
    """The port is held by something else."""


class StartError(ServerError):
    """The server did not become ready."""


class NotRunningError(ServerError):
    """No managed server is running where one was expected."""


class BenchInputError(ProfileError):
    """Bad input to the benchmark (a prompts file, a sweep grid, a profile to save into). A
    ProfileError, so the CLI reports it as bad input (exit 2) like an invalid profile."""
