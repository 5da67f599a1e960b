"""Typed errors. Each carries a message a user can act on and a stable `code`."""

from __future__ import annotations


class ChatAgentError(Exception):
    """Base class for every error chatagent raises on purpose."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BrowserNotFoundError(ChatAgentError):
    code = "browser_not_found"


class BrowserError(ChatAgentError):
    code = "browser_error"


class TabError(ChatAgentError):
    """One tab could not be opened or read; the other tabs carry on."""

    code = "tab_error"


class ToolError(ChatAgentError):
    """A tool call failed; the message goes back to the model as the tool result."""

    code = "tool_error"


class ModelError(ChatAgentError):
    """The model call failed. `retryable`: the same request may succeed later;
    `retry_after_s`: how long the provider asked us to wait, when it said."""

    code = "model_error"
    retryable = False

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ModelConfigError(ModelError):
    """Bad model name, missing key, unknown model: retrying will not help."""

    code = "model_config"


class ModelAuthError(ModelConfigError):
    code = "model_auth"


class ModelNotFoundError(ModelConfigError):
    code = "model_not_found"


class ModelRateLimitError(ModelError):
    code = "rate_limited"
    retryable = True


class ModelUnavailableError(ModelError):
    """5xx, connection refused or dropped, a malformed reply."""

    code = "model_unavailable"
    retryable = True


class ModelTimeoutError(ModelError):
    """The stream stalled: no data for longer than the stall timeout."""

    code = "model_timeout"
    retryable = True


class ContextOverflowError(ModelError):
    """The request is larger than the model's context window."""

    code = "context_overflow"


class ModelStreamInterrupted(ModelError):
    """The reply broke off after part of it was shown: retrying would repeat it."""

    code = "model_interrupted"
