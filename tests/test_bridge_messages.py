"""Message models: valid and invalid frames, limits, error codes."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from chatagent.events import Done, Token, parse_event
from chatagent.limits import MAX_SELECTION_CHARS
from extension_bridge.errors import MessageError
from extension_bridge.messages import (
    MAX_HTML_BYTES,
    MAX_QUESTION_CHARS,
    MAX_TABS,
    PROTOCOL_VERSION,
    AskMessage,
    CancelMessage,
    ErrorMessage,
    EventMessage,
    PingMessage,
    PongMessage,
    SettingsSetMessage,
    TabLabel,
    ToolRequestMessage,
    ToolResultMessage,
    parse_message,
    parse_outgoing,
    try_parse_message,
)


def ask(**over: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "type": "ask",
        "id": "req-1",
        "question": "What is this page about?",
        "tabs": [{"tabId": 12, "url": "https://example.com/", "title": "Example", "html": "<p>hi</p>"}],
    }
    msg.update(over)
    return msg


def err(data: Any) -> MessageError:
    with pytest.raises(MessageError) as ei:
        parse_message(data)
    return ei.value


# ---------------------------------------------------------------- valid


def test_ping() -> None:
    assert isinstance(parse_message({"type": "ping"}), PingMessage)
    assert parse_message({"type": "ping", "version": 1}).version == 1  # type: ignore[union-attr]


def test_ask_minimal_and_full() -> None:
    m = parse_message(ask())
    assert isinstance(m, AskMessage)
    assert m.tabs[0].tab_id == 12 and m.tabs[0].html == "<p>hi</p>" and m.tabs[0].text is None
    assert m.model is None and m.no_cache is False
    full = parse_message(
        ask(
            model="gemini-2.5-flash",
            noCache=True,
            tabs=[
                {"tabId": 1, "url": "https://a/", "title": "A", "html": "", "text": "rendered"},
                {"tabId": 2, "url": "https://b/"},
            ],
        )
    )
    assert isinstance(full, AskMessage)
    assert full.no_cache and full.model == "gemini-2.5-flash"
    assert full.tabs[0].text == "rendered" and full.tabs[1].title == "" and full.tabs[1].html == ""


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    m = parse_message(ask(futureField={"x": 1}))
    assert isinstance(m, AskMessage)


def test_cancel() -> None:
    m = parse_message({"type": "cancel", "id": "req-1"})
    assert isinstance(m, CancelMessage) and m.id == "req-1"


def test_settings_set_removes_a_key_with_null_and_leaves_unsent_ones() -> None:
    """The panel's "Remove the saved key": null, not a missing field, which would leave it be."""
    m = parse_message({"type": "settings_set", "id": "s", "values": {"googleApiKey": None}})
    assert isinstance(m, SettingsSetMessage)
    assert m.values.model_fields_set == {"google_api_key"} and m.values.google_api_key is None
    assert err({"type": "settings_set", "id": "s", "values": {"googleApiKey": 5}}).code == "invalid_message"


def test_tool_result_variants() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nxxxx").decode()
    m = parse_message({"type": "tool_result", "id": "r", "callId": "c1", "ok": True, "png": png})
    assert isinstance(m, ToolResultMessage) and m.png_bytes().startswith(b"\x89PNG")
    # captureVisibleTab returns a data URL: accepted, prefix dropped.
    m = parse_message(
        {"type": "tool_result", "id": "r", "callId": "c1", "ok": True, "png": "data:image/png;base64," + png}
    )
    assert m.png == png  # type: ignore[union-attr]
    m = parse_message(
        {
            "type": "tool_result",
            "id": "r",
            "callId": "c2",
            "ok": True,
            "text": "visible",
            "scroll": {"scrollY": 800, "pageHeight": 5000.5, "viewportHeight": 700, "atBottom": False},
        }
    )
    assert m.scroll.scroll_y == 800 and m.scroll.page_height == 5000.5  # type: ignore[union-attr]
    m = parse_message({"type": "tool_result", "id": "r", "callId": "c3", "ok": False, "error": "Tab was closed"})
    assert not m.ok and m.error == "Tab was closed"  # type: ignore[union-attr]


# ---------------------------------------------------------------- invalid


@pytest.mark.parametrize("data", [[], "ping", 3, None, True])
def test_not_an_object(data: Any) -> None:
    e = err(data)
    assert e.code == "invalid_message" and "JSON object" in e.message


@pytest.mark.parametrize("data", [{}, {"type": "hello", "id": "x"}, {"type": 5}, {"type": "pong"}])
def test_unknown_type(data: dict[str, Any]) -> None:
    e = err(data)
    assert e.code == "unknown_type"
    assert "ping, ask, cancel, tool_result" in e.message
    assert e.request_id == data.get("id")


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"id": ""}, "id"),
        ({"id": 5}, "id"),
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
        ({"question": ["q"]}, "question"),
        ({"tabs": []}, "tabs"),
        ({"tabs": "12"}, "tabs"),
        ({"tabs": [{"tabId": "12", "url": "https://x/"}]}, "tabs.0.tabId"),
        ({"tabs": [{"tabId": -1, "url": "https://x/"}]}, "tabs.0.tabId"),
        ({"tabs": [{"tabId": 1.5, "url": "https://x/"}]}, "tabs.0.tabId"),
        ({"tabs": [{"tabId": True, "url": "https://x/"}]}, "tabs.0.tabId"),
        ({"tabs": [{"tabId": 1}]}, "tabs.0.url"),
        ({"tabs": [{"tabId": 1, "url": "a"}, {"tabId": 1, "url": "b"}]}, "tabs"),
        ({"noCache": "yes"}, "noCache"),
        ({"model": 3}, "model"),
        ({"selection": {"tabId": 13, "text": "hi"}}, "selection.tabId is not one of the ask's tabs"),
        ({"selection": {"tabId": "12", "text": "hi"}}, "selection.tabId"),
        ({"selection": {"tabId": 12, "text": "  \n "}}, "selection.text"),
        ({"selection": {"tabId": 12}}, "selection.text"),
        ({"selection": "hi"}, "selection"),
    ],
)
def test_invalid_ask_fields(over: dict[str, Any], field: str) -> None:
    e = err(ask(**over))
    assert e.code == "invalid_message", e.message
    assert field in e.message
    assert e.message.startswith("Invalid 'ask' message: ")


def test_missing_fields_are_all_named() -> None:
    e = err({"type": "ask", "id": "r9"})
    assert e.code == "invalid_message" and e.request_id == "r9"
    assert "question" in e.message and "tabs" in e.message and "Field required" in e.message


@pytest.mark.parametrize(
    "data",
    [
        {"type": "cancel"},
        {"type": "tool_result", "id": "r", "ok": True},
        {"type": "tool_result", "id": "r", "callId": "c", "ok": "true"},
        {"type": "tool_result", "id": "r", "callId": "c", "ok": True, "png": "not base64!"},
        {"type": "tool_result", "id": "r", "callId": "c", "ok": True, "scroll": {"scrollY": "10"}},
    ],
)
def test_invalid_other_messages(data: dict[str, Any]) -> None:
    assert err(data).code == "invalid_message"


def test_too_many_tabs() -> None:
    tabs = [{"tabId": i, "url": f"https://x/{i}"} for i in range(MAX_TABS + 1)]
    e = err(ask(tabs=tabs))
    assert e.code == "too_many_tabs" and e.request_id == "req-1"
    assert f"at most {MAX_TABS} tabs (got {MAX_TABS + 1})" in e.message
    assert isinstance(parse_message(ask(tabs=tabs[:MAX_TABS])), AskMessage)


def test_html_limit_counts_utf8_bytes() -> None:
    ok = "a" * MAX_HTML_BYTES
    assert isinstance(parse_message(ask(tabs=[{"tabId": 1, "url": "u", "html": ok}])), AskMessage)
    e = err(ask(tabs=[{"tabId": 1, "url": "u", "html": "é" * (MAX_HTML_BYTES // 2 + 1)}]))
    assert e.code == "too_large" and "tabs.0.html" in e.message and str(MAX_HTML_BYTES) in e.message


def test_question_limit() -> None:
    assert isinstance(parse_message(ask(question="q" * MAX_QUESTION_CHARS)), AskMessage)
    e = err(ask(question="q" * (MAX_QUESTION_CHARS + 1)))
    assert e.code == "too_large" and "question" in e.message


def test_selection_is_typed_and_bounded() -> None:
    m = parse_message(ask(selection={"tabId": 12, "text": "s" * MAX_SELECTION_CHARS}))
    assert isinstance(m, AskMessage) and m.selection is not None
    assert m.selection.tab_id == 12 and len(m.selection.text) == MAX_SELECTION_CHARS
    e = err(ask(selection={"tabId": 12, "text": "s" * (MAX_SELECTION_CHARS + 1)}))
    assert e.code == "too_large" and "selection.text" in e.message


def test_try_parse_returns_error() -> None:
    out = try_parse_message({"type": "nope"})
    assert isinstance(out, MessageError) and out.code == "unknown_type"
    assert isinstance(try_parse_message({"type": "ping"}), PingMessage)


# ---------------------------------------------------------------- outgoing


def test_outgoing_wire_shapes() -> None:
    assert PongMessage().to_wire() == {"type": "pong", "version": PROTOCOL_VERSION}
    req = ToolRequestMessage(id="r", call_id="c1", name="scroll", args={"direction": "down"}, tab_id=5)
    assert req.to_wire() == {
        "type": "tool_request",
        "id": "r",
        "callId": "c1",
        "name": "scroll",
        "args": {"direction": "down"},
        "tabId": 5,
    }
    assert ErrorMessage(code="bad_json", message="m").to_wire() == {
        "type": "error",
        "id": None,
        "code": "bad_json",
        "message": "m",
    }
    ev = EventMessage.wrap("r", Token(text="hi")).to_wire()
    assert ev == {"type": "event", "id": "r", "event": {"type": "token", "text": "hi"}}
    done = EventMessage.wrap("r", Done(answer="a", pass_=2))
    assert parse_event(done.event) == Done(answer="a", pass_=2)
    first = EventMessage(id="r", event={"type": "pass_start", "pass": 1}, tabs=[TabLabel(tab_id=7, label="2")])
    assert first.to_wire()["tabs"] == [{"tabId": 7, "label": "2"}]
    for m in (PongMessage(), req, ErrorMessage(id="r", code="x", message="y"), done, first):
        assert parse_outgoing(m.to_wire()) == m


def test_error_from_exception() -> None:
    e = ErrorMessage.from_exception(MessageError("too_many_tabs", "too many", "r5"))
    assert (e.id, e.code, e.message) == ("r5", "too_many_tabs", "too many")
    e = ErrorMessage.from_exception(RuntimeError("boom"))
    assert (e.id, e.code, e.message) == (None, "internal", "boom")
