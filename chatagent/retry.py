"""Calling the model: one streamed reply, with stall detection, provider
failures classified into chatagent's typed errors, and bounded retries with
exponential backoff and full jitter.

The clients' own retries are switched off (`models/`), so this is the only
place that decides: provider SDKs retry silently for up to a minute, which
looks like a hang to the user; here every retry is announced and bounded in
count and in total waiting time.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core import exceptions as lc
from langchain_core.messages import AIMessageChunk

from .errors import (
    ContextOverflowError,
    ModelAuthError,
    ModelConfigError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelStreamInterrupted,
    ModelTimeoutError,
    ModelUnavailableError,
)


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4  # tries per model call, the first one included
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    budget_s: float = 30.0  # total waiting between tries, per model call
    stall_s: float = 60.0  # no chunk for this long: the stream has stalled
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
    key_setting: str = "the model's API key",
    on_retry: OnRetry | None = None,
) -> AsyncIterator[AIMessageChunk]:
    """Yield the chunks of one model reply, retrying transient failures that
    happen before any content arrived. A failure after content was yielded
    raises `ModelStreamInterrupted`: a retry would repeat what was shown."""
    waited = 0.0
    for attempt in range(1, policy.attempts + 1):
        started = False
        stream = start()
        try:
            while True:
                try:
                    async with asyncio.timeout(policy.stall_s):
                        chunk = await anext(stream)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise ModelTimeoutError(
                        f"The model sent nothing for {policy.stall_s:g} s: its stream stalled."
                    ) from None
                started = started or bool(chunk.content or chunk.tool_call_chunks)
                yield chunk
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised typed
            err = classify(exc, key_setting)
            if started:
                raise ModelStreamInterrupted(
                    f"The model's reply broke off ({err.message}). Ask again to get the whole answer."
                ) from exc
            delay = policy.delay(attempt, err.retry_after_s)
            if not err.retryable or attempt == policy.attempts or waited + delay > policy.budget_s:
                if err.retryable:
                    err.message += f" Gave up after {attempt} tries in {waited:.1f} s of waiting."
                raise err from exc
            if on_retry:
                on_retry(err, attempt, delay)
            await asyncio.sleep(delay)
            waited += delay
        finally:
            await _aclose(stream)


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


def classify(exc: BaseException, key_setting: str = "the model's API key") -> ModelError:
    """Map whatever the client raised onto chatagent's typed model errors.

    LangChain's standard exceptions (`langchain_core.exceptions.Model*Error`)
    come first: provider packages raise them for HTTP statuses, whoever serves
    the model. Transport failures (httpx) and malformed replies follow."""
    if isinstance(exc, ModelError):
        return exc
    detail = _detail(exc)
    if isinstance(exc, lc.ContextOverflowError) or (
        isinstance(exc, lc.ModelInvalidRequestError | ValueError) and _OVERFLOW.search(str(exc))
    ):
        return ContextOverflowError(f"The request is larger than the model's context window ({detail}).")
    if isinstance(exc, lc.ModelAuthenticationError | lc.ModelPermissionDeniedError):
        return ModelAuthError(
            f"The model service refused the credentials ({detail}). Check {key_setting}."
        )
    if isinstance(exc, lc.ModelNotFoundError):
        return ModelNotFoundError(
            f"The model service does not know this model ({detail}). Check the --model name."
        )
    if isinstance(exc, lc.ModelRateLimitError):
        return ModelRateLimitError(f"The model service is rate-limiting us ({detail}).", retry_after_s=_retry_after(exc))
    if isinstance(exc, lc.ModelTimeoutError):
        return ModelTimeoutError(f"The model service timed out ({detail}).")
    if isinstance(exc, lc.ModelAPIError | lc.ModelConnectionError):
        return ModelUnavailableError(f"The model service failed ({detail}).", retry_after_s=_retry_after(exc))
    if isinstance(exc, lc.ModelInvalidRequestError):
        return ModelConfigError(f"The model service rejected the request ({detail}).")
    if _is_transport_error(exc):
        return ModelUnavailableError(f"The connection to the model service failed ({detail}).")
    if _is_malformed_reply(exc):
        return ModelUnavailableError(f"The model service sent a malformed reply ({detail}).")
    status = _status(exc)
    if status == 429:
        return ModelRateLimitError(f"The model service is rate-limiting us ({detail}).", retry_after_s=_retry_after(exc))
    if status in (401, 403):
        return ModelAuthError(f"The model service refused the credentials ({detail}). Check {key_setting}.")
    if status == 404:
        return ModelNotFoundError(f"The model service does not know this model ({detail}). Check the --model name.")
    if status is not None and status >= 500:
        return ModelUnavailableError(f"The model service failed ({detail}).")
    return ModelError(f"The model call failed: {detail}")


def _detail(exc: BaseException) -> str:
    """The provider's own message, short: not the whole JSON body."""
    for e in _chain(exc):
        message = getattr(e, "message", None)
        if isinstance(message, str) and message:
            status = _status(e)
            return f"{status} {message}" if status else message
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "…"


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in out and len(out) < 5:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _status(exc: BaseException) -> int | None:
    for e in _chain(exc):
        for attr in ("status_code", "code"):
            value = getattr(e, attr, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
    return None


def _retry_after(exc: BaseException) -> float | None:
    """google.rpc.RetryInfo (`"retryDelay": "1.5s"`) or an HTTP Retry-After header."""
    for e in _chain(exc):
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


def _is_transport_error(exc: BaseException) -> bool:
    try:
        import httpx
    except ImportError:  # pragma: no cover - every HTTP client here brings httpx
        return False
    return any(isinstance(e, httpx.TransportError) for e in _chain(exc))


def _is_malformed_reply(exc: BaseException) -> bool:
    try:
        from google.genai.errors import UnknownApiResponseError
    except ImportError:
        return False
    return isinstance(exc, UnknownApiResponseError)
