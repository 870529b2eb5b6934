"""Which model server a front end talks to: a profile localagent manages, or a URL the user gave.

Worked out once from the options and the settings, in this order: ``--base-url``, then
``server.base_url`` in the settings, then ``--profile``, then ``server.profile``. A URL given
anywhere wins over a profile: a profile names a server localagent would start, a URL one that is
already there.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.defaults import DEFAULT_PROFILE


@dataclass(frozen=True)
class ManagedProfile:
    """A server localagent starts (or attaches to) for this profile."""

    name: str

    @property
    def label(self) -> str:
        return self.name


@dataclass(frozen=True)
class GivenUrl:
    """An OpenAI-compatible endpoint someone else runs."""

    url: str

    @property
    def label(self) -> str:
        return self.url


EndpointChoice = ManagedProfile | GivenUrl


def choose_endpoint(
    *, base_url: str | None, profile: str | None, configured_url: str | None, configured_profile: str | None
) -> EndpointChoice:
    url = base_url or configured_url
    if url:
        return GivenUrl(url)
    return ManagedProfile(profile or configured_profile or DEFAULT_PROFILE)
