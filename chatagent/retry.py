"""Calling the model: one streamed reply, with stall detection, provider
failures and unusable replies (empty, blocked, malformed, an unoffered tool
call) classified into chatagent's typed errors, and bounded retries with
exponential backoff and full jitter.

The clients' own retries are switched off (`models/`), so this is the only
place that decides: provider SDKs retry silently for up to a minute, which
looks like a hang to the user; here every retry is announced and bounded in
count and in total waiting time.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pydantic
from langchain_core import exceptions as lc
from langchain_core.messages import AIMessageChunk

from .errors import (
    ContextOverflowError,
    ModelAuthError,
    ModelBlockedError,
    ModelConfigError,
    ModelEmptyReplyError,
    ModelError,
    ModelMalformedReplyError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelReplyTooLargeError,
    ModelStreamInterrupted,
    ModelTimeoutError,
    ModelUnavailableError,
    ModelUnexpectedToolCallError,
)
from .reply_bounds import CALLS_CUT_NOTE, ReplyMeter


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4  # tries per model call, the first one included
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    budget_s: float = 30.0  # total waiting between tries, per model call
    stall_s: float = 60.0  # no chunk for this long: the stream has stalled
    # Before the first chunk a model reads its whole prompt: a model on this machine's
    # own cores takes minutes over a few tabs (llama.cpp on 2 cores: ~100 tokens/s).
    first_chunk_s: float | None = None  # None: stall_s
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, attempt: int, retry_after_s: float | None) -> float:
        """Full jitter (uniform in [0, base·2^(n-1)]), but never sooner than the provider asked."""
        jittered = self.rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))
        return max(jittered, retry_after_s or 0.0)


OnRetry = Callable[[ModelError, int, float], None]  # (error, attempt that failed, delay before the next)


async def stream_reply(
    start: Callable[[], AsyncIterator[AIMessageChunk]],
    policy: RetryPolicy,
    *,
    tools_bound: bool,
    classify: Callable[[BaseException], ModelError] | None = None,
    on_retry: OnRetry | None = None,
    on_cut: Callable[[str], None] | None = None,
) -> AsyncIterator[AIMessageChunk]:
    """Yield the chunks of one model reply, retrying transient failures that
    happen before any content arrived. A failure after content was yielded
    raises `ModelStreamInterrupted`: a retry would repeat what was shown.

    A reply that ends (the stream runs out, not closed early by the caller)
    with nothing usable is a failure too (`_unusable`): blocked, empty, or
    only tool calls when `tools_bound` is false. `classify` reads a failure
    (the model's provider knows its clients' errors best).

    Each chunk is measured against what one reply may carry (`reply_bounds`):
    past a bound the reply ends in `ModelReplyTooLargeError`, except for tool
    calls past their bound, which end the reply before them (`on_cut` hears why)."""
    classify = classify or _classify_default
    waited = 0.0
    for attempt in range(1, policy.attempts + 1):
        seen = _Seen()
        meter = ReplyMeter()
        cause: BaseException | None = None
        stream = start()
        try:
            wait = policy.first_chunk_s or policy.stall_s
            while (chunk := await _next(stream, wait)) is not None:
                wait = policy.stall_s
                if not meter.admit(chunk):
                    if on_cut:
                        on_cut(CALLS_CUT_NOTE)
                    break
                seen.add(chunk)
                yield chunk
            err = _unusable(seen, tools_bound)
            if err is None:
                return
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised typed
            err = classify(exc)
            cause = exc if err is not exc else exc.__cause__
            if seen.shown and not isinstance(err, ModelReplyTooLargeError):
                raise ModelStreamInterrupted(
                    f"The model's reply broke off ({err.message}). Ask again to get the whole answer."
                ) from exc
        finally:
            await _aclose(stream)
        delay = policy.delay(attempt, err.retry_after_s)
        if not err.retryable or attempt == policy.attempts or waited + delay > policy.budget_s:
            if err.retryable:
                gave_up = f" Gave up after {attempt} tries in {waited:.1f} s of waiting."
                err.message += gave_up
                err.reason += gave_up
            if err.advice:
                err.message += f" {err.advice}"
            raise err from cause
        if on_retry:
            on_retry(err, attempt, delay)
        await asyncio.sleep(delay)
        waited += delay


# What a client raises when a reply's JSON is not what it expects: `{"candidates": 5}`
# is a TypeError deep in google-genai. Only caught around the client's own
# iteration (`_next`), so the same exception from chatagent's code stays a bug.
_PARSE_ERRORS = (TypeError, LookupError, AttributeError, pydantic.ValidationError, json.JSONDecodeError)


async def _next(stream: AsyncIterator[AIMessageChunk], stall_s: float) -> AIMessageChunk | None:
    """The stream's next chunk, or None at its end."""
    try:
        async with asyncio.timeout(stall_s):
            return await anext(stream)
    except StopAsyncIteration:
        return None
    except TimeoutError:
        raise ModelTimeoutError(f"The model sent nothing for {stall_s:g} s: its stream stalled.") from None
    except _PARSE_ERRORS as exc:
        raise malformed(exc) from exc
    except ValueError as exc:
        # langchain-core's own words when the stream ended with no chunk at all.
        if str(exc) == "No generation chunks were returned":
            raise ModelEmptyReplyError("The model sent an empty reply: its stream had no data.") from exc
        raise


def malformed(exc: BaseException) -> ModelMalformedReplyError:
    """A reply the client could not read (providers use it for their clients' own such errors)."""
    return ModelMalformedReplyError(
        "The model service sent a malformed reply that chatagent could not read "
        f"({type(exc).__name__}: {detail(exc)})."
    )


@dataclass
class _Seen:
    """What a reply has carried so far, for the verdict at its end."""

    shown: bool = False  # text or tool calls went to the caller: a retry would repeat them
    text: bool = False  # text other than whitespace
    tool_calls: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    block_reason: str | None = None
    block_message: str | None = None
    blocked_categories: list[str] = field(default_factory=list)

    def add(self, chunk: AIMessageChunk) -> None:
        text = chunk.text
        self.shown = self.shown or bool(text or chunk.tool_call_chunks)
        self.text = self.text or bool(text.strip())
        self.tool_calls += [c.get("name") or "" for c in chunk.tool_call_chunks]
        meta = chunk.response_metadata
        # Structured fields only (langchain-google-genai's names; OpenAI's
        # finish_reason "content_filter" lands in the same key).
        if reason := _name(meta.get("finish_reason")):
            self.finish_reason = reason
        self.blocked_categories += _blocked(meta.get("safety_ratings"))
        feedback = meta.get("prompt_feedback")
        if isinstance(feedback, Mapping):
            if reason := _name(feedback.get("block_reason")):
                self.block_reason = reason
                message = feedback.get("block_reason_message")
                self.block_message = message if isinstance(message, str) and message else None
            self.blocked_categories += _blocked(feedback.get("safety_ratings"))


# finishReasons by which the provider withholds a reply (Gemini's, then OpenAI's).
_FILTERED = frozenset({
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "content_filter",
})


def _unusable(seen: _Seen, tools_bound: bool) -> ModelError | None:
    """Why a reply that ended gives the caller nothing to use, or None.

    Text is an answer whatever else came with it; tool calls are one only
    when tools were offered. A pass-1 reply with text and calls keeps its
    text (already shown to the user) and its calls are never run."""
    if seen.text or (seen.tool_calls and tools_bound):
        return None
    why = _why(seen)
    if seen.block_reason:
        return ModelBlockedError(
            f"The model service's {_filter(seen.block_reason)} blocked the request, so the model did not "
            f"answer ({why}). The question or the page text sent with it tripped the filter: rephrase the "
            "question, or ask about other pages; the same question will be blocked again."
        )
    if not tools_bound and (seen.tool_calls or seen.finish_reason == "UNEXPECTED_TOOL_CALL"):
        named = [n for n in dict.fromkeys(seen.tool_calls) if n.isidentifier()][:3]
        return ModelUnexpectedToolCallError(
            f"The model asked to use a tool{' (' + ', '.join(named) + ')' if named else ''} although none "
            "was offered at this step, and wrote no answer."
        )
    if seen.finish_reason in _FILTERED:
        return ModelBlockedError(
            f"The model service's {_filter(seen.finish_reason)} withheld the model's reply ({why}). "
            "Rephrase the question, or ask about other pages; the same question will be blocked again."
        )
    return ModelEmptyReplyError(f"The model sent an empty reply: no text and no tool call ({why}).")


def _why(seen: _Seen) -> str:
    """The provider's structured reasons, for the message."""
    if seen.block_reason:
        parts = [f"block reason {seen.block_reason}"]
    else:
        parts = [f"finish reason {seen.finish_reason}" if seen.finish_reason else "no finish reason"]
    if categories := list(dict.fromkeys(seen.blocked_categories)):
        parts.append("flagged: " + ", ".join(categories))
    if seen.block_message:
        parts.append(f"the service said: {_short(seen.block_message)}")
    return "; ".join(parts)


def _filter(reason: str) -> str:
    return "safety filter" if "SAFETY" in reason else "content filter"


_ENUM_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")


def _name(value: Any) -> str | None:
    """An enum-like field as its name (the SDK gives enums or strings); None
    when absent or not a plain name (it is shown to the user)."""
    value = value.value if isinstance(value, Enum) else value
    return value if isinstance(value, str) and _ENUM_NAME.fullmatch(value) else None


def _blocked(ratings: Any) -> list[str]:
    """Categories a filter blocked, as words: HARM_CATEGORY_DANGEROUS_CONTENT → dangerous content."""
    if not isinstance(ratings, list):
        return []
    names = (_name(r.get("category")) for r in ratings if isinstance(r, Mapping) and r.get("blocked"))
    return [n.removeprefix("HARM_CATEGORY_").lower().replace("_", " ") for n in names if n]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "…"


async def _aclose(stream: AsyncIterator[Any]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # noqa: BLE001 - a broken stream may fail to close too; it is gone either way
            pass


_OVERFLOW = re.compile(
    r"exceeds the maximum number of tokens|context[ _-]?(length|window)|maximum context|too many tokens|"
    r"prompt is too long|input is too long",
    re.IGNORECASE,
)


def classify(exc: BaseException, key_setting: str = "the model's API key", key: str | None = None) -> ModelError:
    """Map whatever the client raised onto chatagent's typed model errors.

    LangChain's standard exceptions (`langchain_core.exceptions.Model*Error`)
    come first: provider packages raise them for HTTP statuses, whoever serves
    the model. Transport failures (httpx) and malformed replies follow.
    `key_setting`: how the command line sets the key; `key`: that setting."""
    if isinstance(exc, ModelError):
        return exc
    said = detail(exc)
    if isinstance(exc, lc.ContextOverflowError) or (
        isinstance(exc, lc.ModelInvalidRequestError | ValueError) and _OVERFLOW.search(str(exc))
    ):
        return ContextOverflowError(f"The request is larger than the model's context window ({said}).")
    refused = f"The model service refused the credentials ({said})."
    unknown = f"The model service does not know this model ({said})."
    if isinstance(exc, lc.ModelAuthenticationError | lc.ModelPermissionDeniedError):
        return ModelAuthError(f"{refused} Check {key_setting}.", reason=refused, setting=key)
    if isinstance(exc, lc.ModelNotFoundError):
        return ModelNotFoundError(f"{unknown} Check the --model name.", reason=unknown, setting="model")
    if isinstance(exc, lc.ModelRateLimitError):
        return ModelRateLimitError(f"The model service is rate-limiting us ({said}).", retry_after_s=_retry_after(exc))
    if isinstance(exc, lc.ModelTimeoutError):
        return ModelTimeoutError(f"The model service timed out ({said}).")
    if isinstance(exc, lc.ModelAPIError | lc.ModelConnectionError):
        return ModelUnavailableError(f"The model service failed ({said}).", retry_after_s=_retry_after(exc))
    if isinstance(exc, lc.ModelInvalidRequestError):
        return ModelConfigError(f"The model service rejected the request ({said}).")
    if _is_transport_error(exc):
        return ModelUnavailableError(f"The connection to the model service failed ({said}).")
    status = _status(exc)
    if status == 429:
        return ModelRateLimitError(f"The model service is rate-limiting us ({said}).", retry_after_s=_retry_after(exc))
    if status in (401, 403):
        return ModelAuthError(f"{refused} Check {key_setting}.", reason=refused, setting=key)
    if status == 404:
        return ModelNotFoundError(f"{unknown} Check the --model name.", reason=unknown, setting="model")
    if status is not None and status >= 500:
        return ModelUnavailableError(f"The model service failed ({said}).")
    return ModelError(f"The model call failed: {said}")


def _classify_default(exc: BaseException) -> ModelError:
    return classify(exc)


def detail(exc: BaseException) -> str:
    """The provider's own message, short: not the whole JSON body (providers quote it too)."""
    for e in causes(exc):
        message = getattr(e, "message", None)
        if isinstance(message, str) and message:
            status = _status(e)
            return f"{status} {message}" if status else message
    return _short(str(exc)) or type(exc).__name__


def causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, nearest first (at most five)."""
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in out and len(out) < 5:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _status(exc: BaseException) -> int | None:
    for e in causes(exc):
        for attr in ("status_code", "code"):
            value = getattr(e, attr, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
    return None


def _retry_after(exc: BaseException) -> float | None:
    """google.rpc.RetryInfo (`"retryDelay": "1.5s"`) or an HTTP Retry-After header."""
    for e in causes(exc):
        details = getattr(e, "details", None)
        if isinstance(details, dict):
            for d in (details.get("error") or {}).get("details") or []:
                delay = d.get("retryDelay") if isinstance(d, dict) else None
                if isinstance(delay, str) and delay.endswith("s"):
                    try:
                        return float(delay[:-1])
                    except ValueError:
                        pass
        headers = getattr(getattr(e, "response", None), "headers", None)
        value = headers.get("retry-after") if headers is not None else None
        if value:
            try:
                return float(value)
            except ValueError:
                pass
    return None


def _http_errors(name: str) -> tuple[type[BaseException], ...]:
    """The exception class `name` of each HTTP client a model SDK has loaded:
    httpx, and httpx2 (its fork, which google-genai 3 uses). One not loaded
    raised nothing, so it is not imported for the test."""
    return tuple(
        cls for module in ("httpx", "httpx2")
        if isinstance(cls := getattr(sys.modules.get(module), name, None), type) and issubclass(cls, BaseException)
    )


def _is_transport_error(exc: BaseException) -> bool:
    errors = _http_errors("TransportError")  # none loaded: isinstance(e, ()) is False
    return any(isinstance(e, errors) for e in causes(exc))


def is_connection_error(exc: BaseException) -> bool:
    """The service could not be reached at all (refused, unresolvable, reset while connecting)."""
    if any(isinstance(e, lc.ModelConnectionError) for e in causes(exc)):
        return True
    errors = _http_errors("ConnectError")  # none loaded: isinstance(e, ()) is False
    return any(isinstance(e, errors) for e in causes(exc))
