"""Whether an agent's own prompt leaves room to work in the server's context. An agent whose
system prompt and tools fill the context fails on its first request, or right after, with an
error from the server the person has to decode; this check says it before the agent starts."""

from __future__ import annotations

from dataclasses import dataclass

from localagent.errors import LocalAgentError
from localagent.launch.local_server import slot_context
from server.profiles import Profile

# What a turn needs beyond the agent's own prompt: the request, a file or two, the answer, and
# what the project adds (its CLAUDE.md or AGENTS.md, its tree): the prompt is measured outside any
# project (prompt_measure), so that one figure holds for every project.
ROOM_FOR_WORK = 4096


class ContextTooSmall(LocalAgentError):
    """The profile is the wrong choice for this agent: like bad configuration, exit code 2."""

    exit_code = 2


@dataclass(frozen=True)
class PromptFit:
    agent: str
    version: str
    prompt_tokens: int
    context_tokens: int  # per slot

    @property
    def fits(self) -> bool:
        return self.prompt_tokens + ROOM_FOR_WORK <= self.context_tokens

    def summary(self) -> str:
        share = round(100 * self.prompt_tokens / self.context_tokens)
        return f"{self.agent} {self.version}: its prompt takes {self.prompt_tokens:,} of {self.context_tokens:,} tokens ({share}%)"


def require_fit(fit: PromptFit, profile: str, serving: str, profiles: dict[str, Profile]) -> None:
    """Raise ContextTooSmall, saying what would do, when the prompt does not fit. ``serving``: the
    profile the running server was started for (another one when it was attached to)."""
    if fit.fits:
        return
    needed = fit.prompt_tokens + ROOM_FOR_WORK
    attached_elsewhere = serving != profile
    holder = f"the running server (profile {serving})" if attached_elsewhere else f"profile {profile}"
    # The profile itself is a way out only when the server it attached to is another profile's.
    candidates = {name: p for name, p in profiles.items() if attached_elsewhere or name != profile}
    larger = larger_profile(candidates, needed, profiles.get(profile))
    if larger and larger[0] == profile:
        advice = f"Stop that server (localagent server stop) so that profile {profile} starts its own."
    elif larger:
        advice = f"Use a profile with a larger context ({larger[0]}: {larger[1]:,})."
    else:
        advice = f"No known profile holds {needed:,}; raise ctx_size in a profile of your own."
    raise ContextTooSmall(
        f"{fit.agent}'s own prompt is {fit.prompt_tokens:,} tokens; {holder} holds "
        f"{fit.context_tokens:,} per slot, and {ROOM_FOR_WORK:,} more are kept for the work. {advice}"
    )


def larger_profile(profiles: dict[str, Profile], needed: int, current: Profile | None) -> tuple[str, int] | None:
    """A profile whose context per slot holds ``needed`` tokens: one with the current profile's
    model first (nothing new to download), then the smallest context that will do; None when no
    profile's settings say they hold that much."""
    fitting = [
        (current is None or p.model != current.model, context, name)
        for name, p in profiles.items()
        if (context := slot_context(p)) and context >= needed
    ]
    if not fitting:
        return None
    _other_model, context, name = min(fitting)
    return name, context
