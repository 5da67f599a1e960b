"""Run hooks: the agent calls them at the points of a question that callers
time or watch (benchmarks, progress reports), so nobody needs to reach inside.

Every method runs on the event loop, synchronously, and must return quickly;
the defaults do nothing. Subclass and override what you need."""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from .context import PageContext


class RunHooks:
    def context_built(self, context: PageContext) -> None:
        """The tabs were read, extracted and fitted for the question (its timings are in `context`)."""

    def request_sent(self, pass_: int, turn: int, messages: list[BaseMessage]) -> None:
        """A request to the model is about to go out: pass 1 or 2, the model turn (from 1), what it carries."""

    def first_chunk(self, pass_: int, turn: int) -> None:
        """The first chunk of the model's reply to that request arrived."""

    def tool_called(self, name: str, ok: bool) -> None:
        """A browser tool finished (pass 2)."""
