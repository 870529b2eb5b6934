"""Events to pass on as they come, then one result: how the loop's pieces report back.

A model request and a tool call each produce two things: events for the front end, live, and
one value for the loop (the assembled reply, the tool's result). An async generator cannot
return a value, and an object handed in to be filled hides who writes what and when. So such a
piece is written as an async generator that yields its events and, last, its result; the
caller iterates the stream, passing the events on, and then reads ``.result``:

    request = self._request()
    async for event in request:
        yield event
    reply = request.result
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import wraps
from typing import Generic, ParamSpec, TypeVar

from agent.events import Event

__all__ = ["EventStream", "streamed"]

T = TypeVar("T")
P = ParamSpec("P")


class EventStream(Generic[T]):
    """Iterate for the events; afterwards ``result`` is the one item that was not an event."""

    def __init__(self, items: AsyncIterator[Event | T]) -> None:
        self._items = items
        self._result: T | None = None
        self._finished = False

    async def __aiter__(self) -> AsyncIterator[Event]:
        async for item in self._items:
            if isinstance(item, Event):
                yield item
            else:
                self._result, self._finished = item, True

    @property
    def result(self) -> T:
        if not self._finished:
            raise RuntimeError("the stream's result was read before the stream produced it")
        return self._result  # type: ignore[return-value]  # set with _finished


def streamed(produce: Callable[P, AsyncIterator[Event | T]]) -> Callable[P, EventStream[T]]:
    """Make an async generator of events-then-result return an EventStream."""

    @wraps(produce)
    def start(*args: P.args, **kwargs: P.kwargs) -> EventStream[T]:
        return EventStream(produce(*args, **kwargs))

    return start
