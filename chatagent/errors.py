"""Typed errors. Each carries a message a user can act on and a stable `code`."""

from __future__ import annotations


class ChatAgentError(Exception):
    """Base class for every error chatagent raises on purpose.

    `message` says what happened and what to do in the words of the command
    line (its flags, `chatagent config`, the environment), which MCP and the
    daemon share. `reason` is what happened alone, and `setting` the setting
    (a `Settings` key) whose value would fix it: a front end that names its
    settings otherwise (the side panel: "Settings → Gemini API key") says
    `reason` and its own way to change `setting`."""

    code = "error"
    setting: str | None = None

    def __init__(self, message: str, *, reason: str | None = None, setting: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or message
        if setting is not None:
            self.setting = setting


class UsageError(ChatAgentError):
    """The command line asks for something that cannot be done as written (a
    value a setting cannot take, a missing URL, an empty question): exit
    status 2, as for the errors argparse finds."""

    code = "usage_error"


class BrowserNotFoundError(ChatAgentError):
    code = "browser_not_found"


class BrowserError(ChatAgentError):
    code = "browser_error"


class TabError(ChatAgentError):
    """One tab could not be opened or read; the other tabs carry on."""

    code = "tab_error"


class UnnamedLocalFileError(TabError):
    """The tab shows a local file (as its page or in a frame) that the user did
    not name: it is never read. Its own code, so a front end can say so
    without quoting the file's address (`chatagent mcp`'s list_tabs)."""

    code = "unnamed_local_file"


class ToolError(ChatAgentError):
    """A tool call failed; the message goes back to the model as the tool result."""

    code = "tool_error"


class ModelError(ChatAgentError):
    """The model call failed. `retryable`: the same request may succeed later;
    `retry_after_s`: how long the provider asked us to wait, when it said;
    `advice`: what the user can do, added once the retries are used up (a
    retry's note would not want it)."""

    code = "model_error"
    retryable = False
    advice = ""

    def __init__(self, message: str, *, retry_after_s: float | None = None, reason: str | None = None,
                 setting: str | None = None) -> None:
        super().__init__(message, reason=reason, setting=setting)
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
    """5xx, connection refused or dropped."""

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


class ModelMalformedReplyError(ModelError):
    """The reply could not be read: not JSON, or JSON the client could not
    parse (`{"candidates": 5}`). Retryable: a garbled reply is usually a
    one-off of the service or a proxy in between."""

    code = "model_malformed"
    retryable = True
    advice = "Ask again, or pick another model with --model."
    setting = "model"


class ModelEmptyReplyError(ModelError):
    """The reply ended with no text and no tool call, and no filter said why
    (`[]`, `{}`, an empty candidate). Retryable: models do this now and then
    and usually answer the same request when asked again."""

    code = "model_empty"
    retryable = True
    advice = "Ask again, or pick another model with --model."
    setting = "model"


class ModelBlockedError(ModelError):
    """The provider's safety or content filter blocked the request or withheld
    the reply. Not retryable: the same request is blocked again."""

    code = "model_blocked"


class ModelUnexpectedToolCallError(ModelError):
    """The model called a tool when none was offered (pass 1) and wrote no
    text. Not retryable: it follows from the request (a page may be telling
    the model to call tools), so asking the same again tends to repeat it."""

    code = "model_unexpected_tool_call"
    advice = "Ask again, or pick another model with --model (a page that tells the model to call tools can cause this)."
    setting = "model"


class ModelReplyTooLargeError(ModelError):
    """A reply passed a bound on what one reply may carry (`reply_bounds`: bytes,
    tool-call arguments, chunks with nothing in them), and was stopped there; what
    it asked for is not run. Not retryable: the same request tends to repeat it."""

    code = "model_reply_too_large"
    advice = "Ask again, or pick another model with --model."
    setting = "model"


class OfflineTimeoutError(ModelError):
    """The offline model's reading of one reply passed `offline_timeout` and was stopped
    (its worker killed). Not retryable: the same pages and question take as long again."""

    code = "offline_timeout"
    setting = "offline_timeout"
