"""A key goes only to the endpoint it was saved for (issue 40, part 1).

The side panel's extension is untrusted: a `settings_set` frame that points
an endpoint at another server (here a second local Gemini-compatible server,
"the attacker", which records every request) must not take the saved key
there, from the panel or from a later `chatagent ask`; endpoints are https,
or http on this machine only, wherever they are set. Through the real host
over its pipes, the real Gemini client and the real CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatagent.testing.gemini_server import GeminiServer, TextReply
from extension_bridge.spawn import spawn_host

from conftest import PAGES
from test_bridge_host import Peer
from test_settings import run_cli
from warm_start import command

pytestmark = pytest.mark.e2e

GOOGLE = "https://generativelanguage.googleapis.com"
PRODUCT = (PAGES / "product.html").read_text()
# None of the user's own settings from the environment: the panel's (the file's) alone.
NO_ENV = {"GOOGLE_API_KEY": "", "GEMINI_API_KEY": "", "GOOGLE_GEMINI_BASE_URL": "", "CHATAGENT_MODEL": "",
          "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "CHATAGENT_OPENAI_BASE_URL": ""}


@pytest.fixture
def attacker() -> Iterator[GeminiServer]:
    """Another server on 127.0.0.1: whatever reaches it, it records."""
    with GeminiServer(ttft_s=0.0, tokens_per_s=None) as server:
        yield server


@contextlib.asynccontextmanager
async def host(**env: str) -> AsyncIterator[Peer]:
    async with spawn_host({**NO_ENV, **env}, host=command(module="extension_bridge")) as proc:
        yield Peer(proc)


async def save(peer: Peer, rid: str, **values: str | None) -> dict[str, Any]:
    """A `settings_set` frame as the extension sends it; the host's answer."""
    await peer.send({"type": "settings_set", "id": rid, "values": values})
    answer = await peer.recv()
    assert answer["id"] == rid, answer
    return answer


async def ask(peer: Peer, rid: str) -> dict[str, Any]:
    tab = {"tabId": 41, "url": "https://shop.example/aurora", "title": "Aurora X14 Pro", "html": PRODUCT}
    await peer.send({"type": "ask", "id": rid, "question": "How much does it cost?", "tabs": [tab]})
    return (await peer.events_until_end(rid))[-1]


def leaked(server: GeminiServer, key: str) -> list[str]:
    """What of `key` or the page reached `server`: headers, paths or bodies that carry them."""
    seen = [json.dumps({"path": r.path, "headers": r.headers, "body": r.body}) for r in server.requests]
    return [s for s in seen if key in s or "x-goog-api-key" in s or "1,349.00" in s]


ASYNC = pytest.mark.asyncio(loop_scope="session")


# --- the side panel over the host's pipes -------------------------------------------------


@ASYNC
async def test_an_endpoint_the_panel_changes_alone_gets_no_saved_key(
    gemini: GeminiServer, attacker: GeminiServer, private_settings: Path,
) -> None:
    """The user saves Gemini with their key in the panel; a later frame moves
    the endpoint alone: the next ask sends neither the key nor the page there,
    and the panel is told to enter the key for this server."""
    gemini.api_key = "users-own-key-1234"
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    async with host() as peer:
        saved = await save(peer, "s1", model="gemini-2.5-flash", googleApiKey="users-own-key-1234",
                           geminiBaseUrl=gemini.url)
        assert saved["type"] == "settings" and saved["problem"] is None
        assert (await ask(peer, "a"))["type"] == "done"
        moved = await save(peer, "s2", geminiBaseUrl=attacker.url)
        end = await ask(peer, "b")
    assert leaked(attacker, "users-own-key-1234") == [], "the key (or the page) went to the new endpoint"
    assert end["type"] == "error" and end["code"] == "model_config", end
    assert moved["problem"] == (f"gemini-2.5-flash's Gemini API key is for {gemini.url}, not {attacker.url}: "
                                "enter the key for this server, or choose Offline.")
    assert moved["settings"]["googleApiKey"] == {
        "value": None, "source": "file", "origin": f"file {private_settings}", "savedFor": gemini.url}
    assert "users-own-key-1234" in private_settings.read_text(), "the key stays, for its own endpoint"


@ASYNC
async def test_a_key_in_the_environment_goes_to_no_endpoint_the_panel_sets(
    attacker: GeminiServer, gemini: GeminiServer,
) -> None:
    """The user's key is in the environment (for Google's endpoint: the
    environment names no other); a panel frame points the file's endpoint
    elsewhere: the environment's key is not sent there. A key entered in the
    panel with that endpoint is, and only that one."""
    gemini.api_key = "key-for-this-server"
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    async with host(GOOGLE_API_KEY="users-env-key-5678", CHATAGENT_MODEL="gemini-2.5-flash") as peer:
        moved = await save(peer, "s1", geminiBaseUrl=attacker.url)
        refused = await ask(peer, "a")
        entered = await save(peer, "s2", geminiBaseUrl=gemini.url, googleApiKey="key-for-this-server")
        done = await ask(peer, "b")
    assert leaked(attacker, "users-env-key-5678") == []
    assert refused["type"] == "error" and refused["code"] == "model_config", refused
    assert moved["problem"] == (f"gemini-2.5-flash's Gemini API key is for {GOOGLE}, not {attacker.url}: "
                                "enter the key for this server, or choose Offline.")
    assert moved["settings"]["googleApiKey"]["source"] == "env"
    assert entered["problem"] is None and entered["settings"]["googleApiKey"]["source"] == "file"
    assert done["type"] == "done" and "$1,349.00" in done["answer"], done
    assert {r.headers.get("x-goog-api-key") for r in gemini.requests} == {"key-for-this-server"}


@ASYNC
async def test_an_endpoint_changed_back_gets_its_key_again_and_one_saved_with_a_key_gets_that_key(
    gemini: GeminiServer, attacker: GeminiServer,
) -> None:
    """Server A with key A; the endpoint alone moved to B: B gets no key; back
    to A: key A works again; B and key B in one change: B gets key B (the
    real Gemini client against both servers)."""
    gemini.api_key, attacker.api_key = "key-for-server-a", "key-for-server-b"
    gemini.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    attacker.enqueue(TextReply(text="It costs $1,349.00 [Tab 1]."))
    async with host() as peer:
        await save(peer, "s1", model="gemini-2.5-flash", googleApiKey="key-for-server-a", geminiBaseUrl=gemini.url)
        await save(peer, "s2", geminiBaseUrl=attacker.url)
        keyless = await ask(peer, "a")
        assert leaked(attacker, "key-for-server-a") == []
        back = await save(peer, "s3", geminiBaseUrl=gemini.url + "/")  # the same server, spelled another way
        again = await ask(peer, "b")
        both = await save(peer, "s4", geminiBaseUrl=attacker.url, googleApiKey="key-for-server-b")
        new = await ask(peer, "c")
    assert keyless["type"] == "error" and keyless["code"] == "model_config", keyless
    assert back["problem"] is None and again["type"] == "done", again
    assert both["problem"] is None and new["type"] == "done", new
    assert {r.headers.get("x-goog-api-key") for r in gemini.requests} == {"key-for-server-a"}
    assert {r.headers.get("x-goog-api-key") for r in attacker.requests} == {"key-for-server-b"}


NEED = "must be an https:// URL, or http:// on this machine (localhost, 127.0.0.1, ::1)"
HTTP_HERE = "http:// is allowed on this machine only (localhost, 127.0.0.1, ::1)"


@pytest.mark.parametrize(("field", "url", "said"), [
    ("geminiBaseUrl", "file:///etc/passwd", f"Gemini endpoint: {NEED}, not file:"),
    ("geminiBaseUrl", "javascript:alert(1)", f"Gemini endpoint: {NEED}, not javascript:"),
    ("geminiBaseUrl", "ftp://127.0.0.1/", f"Gemini endpoint: {NEED}, not ftp:"),
    ("geminiBaseUrl", "http://169.254.169.254/latest/meta-data/",
     f"Gemini endpoint: {HTTP_HERE}: 169.254.169.254 needs https://"),
    ("geminiBaseUrl", "http://generativelanguage.googleapis.com",
     f"Gemini endpoint: {HTTP_HERE}: generativelanguage.googleapis.com needs https://"),
    ("geminiBaseUrl", "https://generativelanguage.googleapis.com@example.com/",
     "Gemini endpoint: must not carry a user name or password (…@)"),
    ("openaiBaseUrl", "http://192.168.1.5:11434/v1", f"Server URL: {HTTP_HERE}: 192.168.1.5 needs https://"),
])
@ASYNC
async def test_an_endpoint_the_panel_sends_must_be_https_or_on_this_machine(
    field: str, url: str, said: str, private_settings: Path,
) -> None:
    """Refused with the field's name in the panel, and nothing of the frame
    saved; http on this machine is fine."""
    async with host() as peer:
        await save(peer, "s1", model="gemini-2.5-flash", googleApiKey="users-own-key-1234",
                   geminiBaseUrl="https://gemini.example/")
        before = private_settings.read_bytes()
        refused = await save(peer, "s2", model="openai:llama3", googleApiKey="attackers-key", **{field: url})
        after = private_settings.read_bytes()
        local = await save(peer, "s3", **{field: "http://localhost:8080/v1"})
    assert refused["type"] == "error" and refused["code"] == "bad_setting", refused
    assert refused["message"] == said
    assert after == before, "a refused frame saves nothing"
    assert local["type"] == "settings" and local["settings"][field]["value"] == "http://localhost:8080/v1", local


# --- the CLI --------------------------------------------------------------------------------


@ASYNC
async def test_a_plain_ask_after_the_panel_moved_the_endpoint_sends_no_key(
    gemini: GeminiServer, attacker: GeminiServer, private_settings: Path,
) -> None:
    """The settings file as the panel left it (key saved for one server, then
    the endpoint alone moved): `chatagent ask` of a local file sends neither
    the key nor the file there, and says which command saves a key for it."""
    async with host() as peer:
        await save(peer, "s1", model="gemini-2.5-flash", googleApiKey="users-own-key-1234", geminiBaseUrl=gemini.url)
        await save(peer, "s2", geminiBaseUrl=attacker.url)
    done = await asyncio.to_thread(run_cli, "ask", str(PAGES / "product.html"), "-q", "How much does it cost?",
                                   env=NO_ENV)
    assert leaked(attacker, "users-own-key-1234") == []
    assert done.returncode != 0 and "`chatagent config set google_api_key KEY`" in done.stderr, done.stderr
    assert f"is for {gemini.url}" in done.stderr, done.stderr


def test_a_key_saved_before_keys_were_bound_is_for_the_default_endpoint(
    attacker: GeminiServer, private_settings: Path,
) -> None:
    """A settings file written by an older chatagent: a key, and an endpoint
    beside it (as a panel frame would have left it). The key is Google's:
    not sent to that endpoint, and `config show` says what it is for."""
    private_settings.write_text(f'model = "gemini-2.5-flash"\ngoogle_api_key = "legacy-key-abcd"\n'
                                f'gemini_base_url = "{attacker.url}"\n')
    done = run_cli("ask", str(PAGES / "product.html"), "-q", "How much does it cost?", env=NO_ENV)
    assert leaked(attacker, "legacy-key-abcd") == []
    assert done.returncode != 0 and f"is for {GOOGLE}" in done.stderr, done.stderr
    shown = json.loads(run_cli("config", "show", "--json", env=NO_ENV).stdout)["google_api_key"]
    assert shown["value"] == f"…abcd (set for {GOOGLE}, not sent to {attacker.url})" and shown["source"] == "file"


def test_config_set_refuses_an_endpoint_that_is_not_https_or_on_this_machine(private_settings: Path) -> None:
    for key, url in (("gemini_base_url", "http://example.com"), ("gemini_base_url", "file:///etc/passwd"),
                     ("openai_base_url", "http://10.0.0.2:11434/v1"), ("openai_base_url", "ftp://127.0.0.1/")):
        bad = run_cli("config", "set", key, url, env=NO_ENV)
        assert bad.returncode == 2, (url, bad.stderr)
        assert bad.stderr.startswith(f"error: Bad value for {key}: ") and "https://" in bad.stderr, bad.stderr
        assert not private_settings.exists(), "a refused value is not written"
    for key, url in (("gemini_base_url", "https://gemini.example"), ("openai_base_url", "http://[::1]:1234/v1"),
                     ("openai_base_url", "http://localhost:1234/v1"), ("gemini_base_url", "http://127.0.0.2:9")):
        assert run_cli("config", "set", key, url, env=NO_ENV).returncode == 0, url
    # From the environment too: a usage error naming the variable, before anything is sent.
    ask = ("ask", str(PAGES / "product.html"), "-q", "How much does it cost?", "--model", "gemini-2.5-flash")
    proc = run_cli(*ask, env={**NO_ENV, "GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "http://169.254.169.254"})
    assert proc.returncode == 2 and "gemini_base_url (environment GOOGLE_GEMINI_BASE_URL)" in proc.stderr, proc.stderr


def test_config_says_which_endpoint_a_saved_key_is_for(private_settings: Path) -> None:
    """`config set` of an endpoint says the saved key stays with the old one
    and how to save one for the new; `config show` says it; moving back
    makes the key usable again. The same for the OpenAI-compatible server."""
    assert run_cli("config", "set", "google_api_key", "AIza-users-key-9876", env=NO_ENV).returncode == 0
    moved = run_cli("config", "set", "gemini_base_url", "https://gemini.example/v1", env=NO_ENV)
    assert moved.returncode == 0, moved.stderr
    assert (f"The saved google_api_key is for {GOOGLE}, so it is not sent to https://gemini.example/v1: "
            "`chatagent config set google_api_key KEY` saves the key for this endpoint.") in moved.stdout
    rows = json.loads(run_cli("config", "show", "--json", env=NO_ENV).stdout)
    assert rows["google_api_key"]["value"] == f"…9876 (set for {GOOGLE}, not sent to https://gemini.example/v1)"
    assert run_cli("config", "unset", "gemini_base_url", env=NO_ENV).returncode == 0
    assert json.loads(run_cli("config", "show", "--json", env=NO_ENV).stdout)["google_api_key"]["value"] == "…9876 (set)"
    # A key saved now is for the endpoint in effect: the environment's.
    env = {**NO_ENV, "OPENAI_BASE_URL": "http://127.0.0.1:1234/v1"}
    assert run_cli("config", "set", "openai_api_key", "sk-local-key-4321", env=env).returncode == 0
    other = run_cli("config", "set", "openai_base_url", "http://127.0.0.1:5678/v1", env=NO_ENV)
    assert "The saved openai_api_key is for http://127.0.0.1:1234/v1, so it is not sent to http://127.0.0.1:5678/v1" in other.stdout
    assert json.loads(run_cli("config", "show", "--json", env=env).stdout)["openai_api_key"]["value"] == "…4321 (set)"


@ASYNC
async def test_a_connection_test_to_another_endpoint_takes_no_saved_key(
    gemini: GeminiServer, attacker: GeminiServer, private_settings: Path,
) -> None:
    """The panel's "Test connection" sends the form as typed, unsaved: an
    endpoint typed alone is asked without the key saved for another (the
    host says there is none for it), and is not saved either."""
    gemini.api_key = "users-own-key-1234"
    async with host() as peer:
        await save(peer, "s1", model="gemini-2.5-flash", googleApiKey="users-own-key-1234", geminiBaseUrl=gemini.url)
        await peer.send({"type": "model_check", "id": "c1", "provider": "gemini", "values": {"geminiBaseUrl": gemini.url}})
        served = await peer.recv()
        await peer.send({"type": "model_check", "id": "c2", "provider": "gemini",
                         "values": {"model": "gemini-2.5-flash", "geminiBaseUrl": attacker.url}})
        elsewhere = await peer.recv()
    assert served == {"type": "model_checked", "id": "c1", "model": None, "endpoint": gemini.url,
                      "models": ["gemini-2.5-flash", "gemini-2.5-pro"], "problem": None}
    assert elsewhere["problem"] == "No Gemini API key for this endpoint. Check the Gemini API key."
    assert attacker.requests == [] and leaked(attacker, "users-own-key-1234") == []
    assert gemini.url in private_settings.read_text() and attacker.url not in private_settings.read_text()
