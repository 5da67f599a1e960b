"""Test and benchmark helpers that ship with the package (``chatagent bench`` uses them).

Names are loaded lazily so that ``python -m chatagent.testing.gemini_server`` does not
import the module twice (runpy warns when the package already imported it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .gemini_server import (
        DropReply,
        ErrorReply,
        FunctionCall,
        FunctionCallReply,
        GeminiServer,
        InlineImage,
        MalformedReply,
        RecordedRequest,
        Reply,
        Responder,
        StallReply,
        TextReply,
        echo_responder,
    )

__all__ = [
    "DropReply",
    "ErrorReply",
    "FunctionCall",
    "FunctionCallReply",
    "GeminiServer",
    "InlineImage",
    "MalformedReply",
    "RecordedRequest",
    "Reply",
    "Responder",
    "StallReply",
    "TextReply",
    "echo_responder",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(".gemini_server", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
