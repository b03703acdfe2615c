"""``--solver model`` for MedCalc-Bench: a model answers each row from its patient note, through
the same backends as the agent, scored by the same ``calcmate.medcalc_bench.score`` as the
registry solver.

Modes: ``zero_shot`` (note + question, answer as JSON), ``one_shot`` (plus one worked example of
the same calculator taken from another row of the file: its note, question, explanation and
answer), ``tools`` (a native-protocol episode with the reference and python tools, ending in the
final-answer block).

The Solver protocol is synchronous (``solve(row)``); the solver runs its own event loop in a
thread and ``prefetch(rows)`` answers many rows concurrently (one vLLM batch per turn).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calcmate.agent.backends.base import BackendConfig, make_backend
from calcmate.agent.episode import EpisodeConfig, run_episode
from calcmate.agent.policy import ModelPolicy
from calcmate.agent.protocols import NativeProtocol, strip_think
from calcmate.medcalc_bench import Answer, BenchRow
from calcmate.tasks import Task

Mode = Literal["zero_shot", "one_shot", "tools"]


class ModelSolverConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Mode = "zero_shot"
    backend: BackendConfig = Field(default_factory=BackendConfig)
    concurrency: int = Field(16, ge=1)
    max_rounds: int = Field(20, ge=1)  # tools mode


SYSTEM = ("You are a helpful assistant for calculating a score for a given patient note. "
          "Please think step-by-step to solve the question and then generate the required score.")
FORMAT = ('Please output your answer only as a JSON dict formatted as '
          '{"step_by_step_thinking": str(your step by step thinking procedure to solve the question), '
          '"answer": str(short and direct answer of the question)}')
TOOLS_INSTRUCTION = ("Look up the calculator's reference (search, fetch), compute with run_python, and end with the "
                     "final answer block holding one entry for this calculator.")


def parse_answer(text: str) -> Any:
    """The ``answer`` of a JSON reply, else the last number-like span of the text."""
    body, _ = strip_think(text or "")
    body = body.replace("```json", "").replace("```", "").strip()
    for cand in (body, body[body.find("{"): body.rfind("}") + 1] if "{" in body else ""):
        try:
            obj = json.loads(cand)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "answer" in obj:
            return obj["answer"]
    m = re.findall(r'"answer"\s*:\s*"?([^"\n}]+)', body)
    if m:
        return m[-1].strip()
    return body or None


class ModelSolver:
    def __init__(self, cfg: ModelSolverConfig, rows: list[BenchRow] | None = None):
        self.cfg = cfg
        self.name = f"model:{cfg.mode}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._cache: dict[str, Answer] = {}
        self._examples: dict[int, list[BenchRow]] = {}
        for r in rows or []:
            self._examples.setdefault(r.calculator_id, []).append(r)
        self._run(self._setup())

    def _run(self, coro) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _setup(self) -> None:
        self.backend = make_backend(self.cfg.backend)
        self.policy = ModelPolicy(self.backend)
        self._sem = asyncio.Semaphore(self.cfg.concurrency)
        self._tools = None
        if self.cfg.mode == "tools":
            from calcmate.tools.toolbox import Toolbox

            self._tools = Toolbox.in_process(servers=("reference", "python"))
            await self._tools.__aenter__()
            self._specs = await self._tools.list_tools()

    def _example(self, row: BenchRow) -> BenchRow | None:
        return next((r for r in self._examples.get(row.calculator_id, []) if r.row_id != row.row_id), None)

    def messages(self, row: BenchRow) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": SYSTEM}]
        ex = self._example(row) if self.cfg.mode == "one_shot" else None
        if ex is not None:
            msgs += [{"role": "user", "content": f"Here is the patient note:\n{ex.patient_note}\n\nHere is the task:\n{ex.question}\n\n{FORMAT}"},
                     {"role": "assistant", "content": json.dumps({"step_by_step_thinking": ex.explanation, "answer": ex.truth})}]
        msgs.append({"role": "user", "content": f"Here is the patient note:\n{row.patient_note}\n\nHere is the task:\n{row.question}\n\n{FORMAT}"})
        return msgs

    async def asolve(self, row: BenchRow) -> Answer:
        async with self._sem:
            if self.cfg.mode != "tools":
                gen = await self.backend.chat(self.messages(row))
                value = parse_answer(gen.text)
                return Answer(value=value, reason=None if value is not None else "no answer in the reply")
            task = Task(task_id=str(row.row_id), fuzzy_question=f"{row.patient_note}\n\n{row.question}\n\n{TOOLS_INSTRUCTION}")
            tr = await run_episode(task, self.policy, self._tools, NativeProtocol(), EpisodeConfig(max_rounds=self.cfg.max_rounds),
                                   specs=self._specs)
            if tr.final_answer:
                return Answer(value=tr.final_answer[0].value, details={"rounds": tr.rounds})
            if tr.finished:
                return Answer(value=parse_answer(tr.final_answer_text or ""), details={"rounds": tr.rounds})
            return Answer(reason=f"episode ended without an answer: {tr.stop_reason}")

    def prefetch(self, rows: list[BenchRow]) -> None:
        async def all_rows():
            answers = await asyncio.gather(*(self.asolve(r) for r in rows), return_exceptions=True)
            for r, a in zip(rows, answers):
                self._cache[r.row_id] = a if isinstance(a, Answer) else Answer(reason=f"{type(a).__name__}: {a}")

        self._run(all_rows())

    def solve(self, row: BenchRow) -> Answer:
        if row.row_id in self._cache:
            return self._cache.pop(row.row_id)
        return self._run(self.asolve(row))

    def close(self) -> None:
        async def shutdown():
            if self._tools is not None:
                await self._tools.__aexit__(None, None, None)
            await self.backend.aclose()

        self._run(shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
