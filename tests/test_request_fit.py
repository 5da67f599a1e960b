"""Every request within the window of the model that answers it: ten tabs to a local
model whose server runs it with 4,096 tokens (Ollama) or 2,048 (llama.cpp), a long
conversation, and a window too small for the question. The servers are stand-ins of
their APIs recording what they receive (`chatagent.testing`); the tabs are pages
written here."""

from __future__ import annotations

import re

import pytest

from chatagent.agent import ChatAgent
from chatagent.browser.static import StaticTab
from chatagent.context import ContextBuilder
from chatagent.events import Done, ErrorEvent, Note, Token
from chatagent.history import History
from chatagent.models import load_model
from chatagent.request_fit import WINDOW_USE
from chatagent.settings import Settings
from chatagent.testing.ollama_server import OllamaModel, OllamaServer
from chatagent.testing.openai_server import LlamaCppServer

TOWNS = ["Arnhold", "Bexley Cross", "Corvale", "Dunmere", "Eastwick", "Fallowmere", "Greythorn", "Harrowby",
         "Ivel Bridge", "Jessop's End"]


def town_page(n: int, town: str) -> str:
    """A long page about one town's market: its opening day in one paragraph among many."""
    filler = "".join(
        f"<p>The {town} traders' guild met in its hall on a wet evening in year {1800 + k} and spoke at length "
        f"about the tolls on the old road, the price of carts and the state of the river crossing near the mill.</p>"
        for k in range(60))
    fact = f"<p>The {town} market opens every {['Monday', 'Tuesday', 'Wednesday'][n % 3]} at dawn.</p>"
    return (f"<!doctype html><html><head><title>{town} market</title></head><body><main><h1>{town} market</h1>"
            f"{filler[: len(filler) // 2]}{fact}{filler[len(filler) // 2:]}</main></body></html>")


def tabs() -> list[StaticTab]:
    return [StaticTab(str(i + 1), f"http://127.0.0.1/{i}", town_page(i, t)) for i, t in enumerate(TOWNS)]


async def ask(agent: ChatAgent, question: str) -> list:
    return [e async for e in agent.ask(question)]


def openai_at(url: str, **more: object) -> Settings:
    return Settings(**{"model": "openai:local", "openai_base_url": url, **more})


@pytest.mark.parametrize("server", ["ollama", "llamacpp"])
async def test_ten_tabs_to_a_local_model_fit_the_window_its_server_uses(server: str) -> None:
    stand_in = (OllamaServer([OllamaModel("local:latest", num_ctx=4096)]) if server == "ollama"
                else LlamaCppServer(n_ctx=2048))
    window = 4096 if server == "ollama" else 2048
    with stand_in:
        model = load_model("openai:local", openai_at(stand_in.url))
        agent = ChatAgent(model, tabs(), builder=ContextBuilder(budget_per_tab=2000))
        events = await ask(agent, "Which day does the Corvale market open?")
        chats = [r for r in stand_in.requests if r.is_chat]
    done = events[-1]
    assert isinstance(done, Done) and any(isinstance(e, Token) for e in events), events[-1]
    # Sent whole at 2,000 tokens a tab, this request would be 10 times over.
    assert chats and all(r.prompt_tokens <= WINDOW_USE * window and r.fits for r in chats), \
        [(r.prompt_tokens, r.window) for r in chats]
    said = [e.text for e in events if isinstance(e, Note) and "reads" in e.text]
    assert len(said) == 1 and f"{window:,} tokens" in said[0] and "the tabs were shortened" in said[0], said


async def test_a_model_whose_tokenizer_counts_more_is_held_to_its_own_count() -> None:
    """A small model's tokenizer splits some text far finer than cl100k (a page in a language
    its vocabulary hardly knows): here 1.6 times. Fitted by cl100k's count, three long tabs
    would be refused by its 2,048; its server counts them (/tokenize), and the request is held
    to that count."""
    with LlamaCppServer(n_ctx=2048, token_ratio=1.6) as server:
        model = load_model("openai:local", openai_at(server.url))
        agent = ChatAgent(model, tabs()[:3], builder=ContextBuilder(budget_per_tab=2000))
        events = await ask(agent, "Which day does the Corvale market open?")
        chats = [r for r in server.requests if r.is_chat]
        counted = [r for r in server.requests if r.path == "/tokenize"]
    assert isinstance(events[-1], Done) and any(isinstance(e, Token) for e in events), events[-1]
    assert chats and all(r.fits and r.prompt_tokens <= WINDOW_USE * 2048 for r in chats), \
        [r.prompt_tokens for r in chats]
    assert counted, "the request was counted by the model's server"
    # Not shrunk further than the count asks: the room is used.
    assert all(r.prompt_tokens >= 0.5 * WINDOW_USE * 2048 for r in chats), [r.prompt_tokens for r in chats]


async def test_when_the_tabs_can_shrink_no_further_the_answers_room_gives_way() -> None:
    """Ten tabs at their floor (title and best lines) to that fine-splitting tokenizer in 2,048:
    not room for them and a quarter of the window for the answer, so the answer's room gives
    way, and the note says so; prompt and answer still fit."""
    with LlamaCppServer(n_ctx=2048, token_ratio=1.35) as server:
        model = load_model("openai:local", openai_at(server.url))
        agent = ChatAgent(model, tabs(), builder=ContextBuilder(budget_per_tab=2000))
        events = await ask(agent, "Which day does the Corvale market open?")
        chats = [r for r in server.requests if r.is_chat]
    assert isinstance(events[-1], Done), events[-1]
    [note] = [e.text for e in events if isinstance(e, Note) and "reads" in e.text]
    assert "the tabs and the answer's room were shortened" in note, note
    answer = int(re.search(r"with ([\d,]+) tokens kept for the answer", note).group(1).replace(",", ""))
    assert 128 <= answer < 460 and chats, note  # 460: a quarter of the window's usable part
    assert all(r.prompt_tokens + answer <= WINDOW_USE * 2048 for r in chats), [r.prompt_tokens for r in chats]


async def test_the_conversation_so_far_gives_way_before_the_tabs() -> None:
    with LlamaCppServer(n_ctx=4096) as server:
        model = load_model("openai:local", openai_at(server.url))
        history = History(budget_tokens=8000)
        for k in range(12):
            history.recall(f"What did the guild say in meeting {k}?",
                           " ".join(f"It spoke about the tolls on the old road and the carts, point {j}." for j in range(40)))
        page = [StaticTab("1", "http://127.0.0.1/a", town_page(0, "Arnhold"))]
        agent = ChatAgent(model, page, builder=ContextBuilder(budget_per_tab=1500), history=history)
        events = await ask(agent, "Which day does the Arnhold market open?")
        chats = [r for r in server.requests if r.is_chat]
    assert isinstance(events[-1], Done) and chats and all(r.prompt_tokens <= WINDOW_USE * 4096 for r in chats)
    [note] = [e.text for e in events if isinstance(e, Note) and "reads" in e.text]
    assert "the earlier turns were shortened" in note and "tabs" not in note, note
    assert "Monday at dawn" in str(chats[-1].body), "the tab kept its budget: the answer's line is in it"


async def test_a_window_too_small_for_the_question_says_which_setting_to_change() -> None:
    with LlamaCppServer(n_ctx=4096) as server:
        model = load_model("openai:local", openai_at(server.url, context_window=600))
        events = await ask(ChatAgent(model, tabs()), "Which day does the Corvale market open?")
        chats = [r for r in server.requests if r.is_chat]
    err = events[-1]
    assert isinstance(err, ErrorEvent) and err.code == "window_too_small" and err.setting == "context_window"
    assert "600 tokens" in err.message and "--context-window" in err.message and "openai:local" in err.message
    assert not chats, "nothing was sent that the model could not read"


async def test_a_hosted_models_large_window_changes_nothing() -> None:
    with LlamaCppServer(n_ctx=1_000_000) as server:
        model = load_model("openai:local", openai_at(server.url))
        events = await ask(ChatAgent(model, tabs()[:3], builder=ContextBuilder(budget_per_tab=2000)),
                           "Which day does the Corvale market open?")
    assert isinstance(events[-1], Done) and not any(isinstance(e, Note) and "reads" in e.text for e in events)


class PhotographedTab(StaticTab):
    """A static tab that can take a screenshot: a small PNG, as a renderer would give one."""

    async def screenshot(self) -> bytes:
        import base64

        return base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


async def test_pass_two_after_a_screenshot_and_many_scrolls_stays_within_the_window() -> None:
    from chatagent.prompts import ESCALATION_MARKER
    from chatagent.testing.openai_server import ChatReply, ToolCall

    steps = [ChatReply(text=ESCALATION_MARKER), ChatReply(tool_calls=[ToolCall("screenshot_tool", {"tab_id": "3"})]),
             *[ChatReply(tool_calls=[ToolCall("scroll_tool", {"tab_id": "3", "direction": "down"})])] * 8,
             ChatReply(text="It opens on Wednesdays [Tab 3].")]
    pages = [PhotographedTab(str(i + 1), f"http://127.0.0.1/{i}", town_page(i, t)) for i, t in enumerate(TOWNS)]
    with OllamaServer([OllamaModel("local:latest", num_ctx=4096)], replies=steps) as ollama:
        model = load_model("openai:local", openai_at(ollama.url))
        agent = ChatAgent(model, pages, builder=ContextBuilder(budget_per_tab=2000), input_budget_factor=100)
        events = await ask(agent, "Which day does the Corvale market open?")
        chats = [r for r in ollama.requests if r.is_chat]
    done = events[-1]
    assert isinstance(done, Done) and done.pass_ == 2 and "Wednesdays" in done.answer, done
    assert len(chats) == len(steps) and all(r.prompt_tokens <= WINDOW_USE * 4096 and r.fits for r in chats), \
        [r.prompt_tokens for r in chats]
