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
    code = "model_error"


class ModelConfigError(ModelError):
    """Bad model name, missing key, unknown model: retrying will not help."""

    code = "model_config"


class AbortedError(ChatAgentError):
    code = "aborted"
