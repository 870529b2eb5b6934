"""Which server a front end talks to, worked out once: a URL given anywhere wins over a profile,
a flag over the settings, and with nothing said the default profile."""

from __future__ import annotations

import pytest

from localagent.endpoint_choice import GivenUrl, ManagedProfile, choose_endpoint
from server.defaults import DEFAULT_PROFILE

URL, OTHER = "http://127.0.0.1:9000/v1", "http://127.0.0.1:9001/v1"


@pytest.mark.parametrize(
    ("base_url", "profile", "configured_url", "configured_profile", "expected"),
    [
        (None, None, None, None, ManagedProfile(DEFAULT_PROFILE)),
        (None, None, None, "tiny-dflash", ManagedProfile("tiny-dflash")),
        (None, "greedy", None, "tiny-dflash", ManagedProfile("greedy")),
        (URL, None, None, "tiny-dflash", GivenUrl(URL)),
        (URL, None, OTHER, None, GivenUrl(URL)),
        (None, None, OTHER, "tiny-dflash", GivenUrl(OTHER)),
        # A URL in the settings is a server that is already there: a --profile does not start another.
        (None, "greedy", OTHER, None, GivenUrl(OTHER)),
    ],
)
def test_the_choice_follows_one_order(base_url, profile, configured_url, configured_profile, expected) -> None:
    choice = choose_endpoint(
        base_url=base_url, profile=profile, configured_url=configured_url, configured_profile=configured_profile
    )
    assert choice == expected
    assert choice.label == (expected.url if isinstance(expected, GivenUrl) else expected.name)
