"""Typed errors of the extension bridge. Each has a stable `code` that is also
what goes on the wire in an `error` frame, so the extension can branch on it."""

from __future__ import annotations

from chatagent.errors import ChatAgentError


class BridgeError(ChatAgentError):
    code = "bridge_error"


class ProtocolError(BridgeError):
    """A frame could not be read or decoded. Unless it is a `TruncatedFrameError`
    the stream is still in sync and the session goes on."""

    code = "protocol_error"


class FrameTooLargeError(ProtocolError):
    """A frame over the size cap; its payload has already been read and dropped."""

    code = "too_large"

    def __init__(self, message: str, size: int = 0) -> None:
        super().__init__(message)
        self.size = size


class BadJsonError(ProtocolError):
    """The frame payload is not UTF-8 or not JSON."""

    code = "bad_json"


class TruncatedFrameError(ProtocolError, EOFError):
    """EOF in the middle of a frame: the peer went away; the session is over.
    An `EOFError` too, so one `except EOFError` ends a read loop on either kind of EOF."""

    code = "truncated"


class MessageError(BridgeError):
    """A well-formed JSON frame that is not a valid message. `code` varies:
    `unknown_type`, `invalid_message`, `too_large`, `too_many_tabs`."""

    def __init__(self, code: str, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id


class BadToolResultError(MessageError):
    """A `tool_result` that names its call (`id`, `callId`) but whose body is
    invalid. The host fails that call with `detail` (the agent sees a tool
    error) rather than dropping it, which would cost the caller a timeout."""

    def __init__(self, code: str, message: str, request_id: str, call_id: str, detail: str) -> None:
        super().__init__(code, message, request_id)
        self.call_id = call_id
        self.detail = detail


class InstallError(BridgeError):
    code = "install_error"


class BridgeClosedError(BridgeError):
    """The other side of the native-messaging pipe is gone."""

    code = "closed"
