"""A stand-in Ollama: its OpenAI-compatible `/v1` (`/v1/chat/completions`,
`/v1/models`) and the parts of its own API chatagent reads a model's window
from (`/api/version`, `/api/show`, `/api/ps`, `/api/tags`), each request
recorded (`OpenAICompatibleServer.requests`: its tokens, the window it met,
whether it was cut).

As Ollama does: a model runs with its Modelfile's `num_ctx`, else the
server's default (`default_num_ctx`: 4,096, Ollama's without
OLLAMA_CONTEXT_LENGTH on a machine with less than 24 GiB of GPU memory),
within the model's own `context_length`; the first request for a model
loads it (then `/api/ps` lists it with that `context_length`); `/v1` takes
no `num_ctx`; and a prompt longer than the window is answered all the same,
cut silently (recorded `truncated`: Ollama drops the start of such a prompt).

    with OllamaServer([OllamaModel("llama3.2:latest")]) as ollama:
        settings = Settings(model="openai:llama3.2", openai_base_url=ollama.url)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .openai_server import OpenAICompatibleServer, Recorded, _Handler


@dataclass
class OllamaModel:
    name: str  # as Ollama lists it: "llama3.2:latest"
    context_length: int = 131_072  # the model's own (`model_info`: "<family>.context_length")
    num_ctx: int | None = None  # its Modelfile's PARAMETER num_ctx; None: none
    family: str = "llama"
    loaded_ctx: int | None = None  # the window it was loaded with (None: not loaded)


def _name(name: str) -> str:
    name = name.strip()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class OllamaServer(OpenAICompatibleServer):
    owned_by = "library"

    def __init__(self, models: Sequence[OllamaModel | str] = (OllamaModel("llama3.2:latest"),), *,
                 default_num_ctx: int = 4096, version: str = "0.12.6", ps_context_length: bool = True,
                 **kwargs: Any) -> None:
        """`ps_context_length`: False for an Ollama before 0.9.7, whose `/api/ps` does not say it."""
        specs = [m if isinstance(m, OllamaModel) else OllamaModel(_name(m)) for m in models]
        self.ollama_models = {_name(m.name): m for m in specs}
        self.default_num_ctx = default_num_ctx
        self.version = version
        self.ps_context_length = ps_context_length
        super().__init__(list(self.ollama_models), **kwargs)

    def spec(self, model: str) -> OllamaModel | None:
        return self.ollama_models.get(_name(model))

    def serves(self, model: str) -> bool:
        return self.spec(model) is not None

    def window_for(self, model: str) -> int | None:
        spec = self.spec(model)
        assert spec is not None
        if spec.loaded_ctx is None:  # a request loads the model (num_ctx: its Modelfile's, else the default)
            spec.loaded_ctx = min(spec.num_ctx or self.default_num_ctx, spec.context_length)
        return spec.loaded_ctx

    def model_entry(self, model: str) -> dict[str, Any]:
        return {"id": model, "object": "model", "created": 1_700_000_000, "owned_by": self.owned_by}

    def not_found(self, model: str) -> dict[str, Any]:
        return {"error": {"message": f"model \"{model}\" not found, try pulling it first", "type": "api_error",
                          "param": None, "code": None}}

    def route(self, handler: _Handler, rec: Recorded) -> bool:
        body = rec.body if isinstance(rec.body, dict) else {}
        if rec.method == "GET" and rec.path == "/api/version":
            handler.send_json(200, {"version": self.version}, rec)
        elif rec.method == "GET" and rec.path == "/api/tags":
            handler.send_json(200, {"models": [{"name": m.name, "model": m.name, "details": self._details(m)}
                                               for m in self.ollama_models.values()]}, rec)
        elif rec.method == "POST" and rec.path == "/api/show":
            spec = self.spec(str(body.get("model") or body.get("name") or ""))
            if spec is None:
                handler.send_json(404, {"error": f"model '{body.get('model')}' not found"}, rec)
            else:
                handler.send_json(200, self._show(spec), rec)
        elif rec.method == "GET" and rec.path == "/api/ps":
            handler.send_json(200, {"models": [self._ps(m) for m in self.ollama_models.values() if m.loaded_ctx]}, rec)
        else:
            return False
        return True

    @staticmethod
    def _details(spec: OllamaModel) -> dict[str, Any]:
        return {"parent_model": "", "format": "gguf", "family": spec.family, "families": [spec.family],
                "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}

    def _show(self, spec: OllamaModel) -> dict[str, Any]:
        # Its parameters as Ollama writes them: "%-*s %#v", one per line.
        params = [f"{'stop':<30} \"<|eot_id|>\""]
        if spec.num_ctx is not None:
            params.insert(0, f"{'num_ctx':<30} {spec.num_ctx}")
        return {"modelfile": f"FROM {spec.name}\n", "parameters": "\n".join(params), "template": "{{ .Prompt }}",
                "details": self._details(spec), "capabilities": ["completion", "tools"],
                "model_info": {"general.architecture": spec.family, "general.parameter_count": 3_212_749_888,
                               f"{spec.family}.context_length": spec.context_length,
                               f"{spec.family}.embedding_length": 3072}}

    def _ps(self, spec: OllamaModel) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": spec.name, "model": spec.name, "size": 3_000_000_000, "digest": "0" * 64,
                                 "details": self._details(spec), "expires_at": "2099-01-01T00:00:00Z",
                                 "size_vram": 0}
        if self.ps_context_length:
            entry["context_length"] = spec.loaded_ctx
        return entry
