"""``--solver model`` for MedCalc-Bench: a model answers each row from its patient note, through
the same backends as the agent, scored by the same ``calcmate.medcalc_bench.score`` as the
registry solver.

Modes: ``zero_shot`` (note + question, answer as JSON), ``one_shot`` (plus one worked example of
the same calculator taken from another row of the file: its note, question, explanation and
answer), ``tools`` (a native-protocol episode with the reference and python tools, ending in the
final-answer block).

Every row's exchange is recorded as a ``Trajectory`` (messages, tool calls and their results,
tokens, the answer read from it) in ``transcripts`` (JSONL, one line per row) when set; a rerun
with the same mode and model reuses the recorded answers, so an interrupted run resumes.

The Solver protocol is synchronous (``solve(row)``); the solver runs its own event loop in a
thread and ``prefetch(rows)`` answers many rows concurrently (one vLLM batch per turn).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calcmate.agent.backends.base import BackendConfig, make_backend
from calcmate.agent.episode import EpisodeConfig, run_episode
from calcmate.agent.policy import ModelPolicy
from calcmate.agent.protocols import NativeProtocol, strip_think
from calcmate.agent.tools import toolset_specs
from calcmate.agent.trajectory import FinalAnswerItem, Trajectory
from calcmate.io import JsonlAppender
from calcmate.medcalc_bench import Answer, BenchRow
from calcmate.scoring.tolerance import parse_date, parse_gestational_age, parse_number
from calcmate.tasks import Task

Mode = Literal["zero_shot", "one_shot", "tools"]


class ModelSolverConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Mode = "zero_shot"
    backend: BackendConfig = Field(default_factory=BackendConfig)
    concurrency: int = Field(16, ge=1)
    max_rounds: int = Field(20, ge=1)  # tools mode
    max_format_retries: int = Field(3, ge=0)  # tools mode: malformed replies in a row before the episode stops
    transcripts: Path | None = None  # JSONL of every row's Trajectory; rows already there are not asked again


SYSTEM = ("You are a helpful assistant for calculating a score for a given patient note. "
          "Please think step-by-step to solve the question and then generate the required score.")
FORMAT = ('Please output your answer only as a JSON dict formatted as '
          '{"step_by_step_thinking": str(your step by step thinking procedure to solve the question), '
          '"answer": str(short and direct answer of the question)}')
TOOLS_INSTRUCTION = ("Look up the calculator's reference (search, fetch), compute with run_python, and end with the "
                     "final answer block holding one entry for this calculator.")


def parse_answer(text: str) -> Any:
    """The ``answer`` of a JSON reply, else the reply's text, read by ``answer_value``."""
    body, _ = strip_think(text or "")
    body = body.replace("```json", "").replace("```", "").strip()
    for cand in (body, body[body.find("{"): body.rfind("}") + 1] if "{" in body else ""):
        try:
            obj = json.loads(cand)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "answer" in obj:
            return answer_value(obj["answer"])
    m = re.findall(r'"answer"\s*:\s*"?([^"\n}]+)', body)
    if m:
        return answer_value(m[-1].strip())
    return answer_value(body)


_NUMBER = re.compile(r"(?<![A-Za-z\d.])-?\d+(?:\.\d+)?")  # not the 2 of "kg/m2" or "SpO2"


def answer_value(raw: Any) -> Any:
    """The value to score: text MedCalc-Bench's rule reads as it is (a number with an optional unit,
    a date, weeks and days) unchanged; other text gives its last number, where a worked answer
    states its result ("MAP = (2 x 60 + 90) / 3 = 70 mm Hg" -> 70.0); no number: None."""
    if not isinstance(raw, str):
        return raw
    s = raw.strip()
    if not s:
        return None
    if parse_number(s) is not None or parse_date(s) is not None or parse_gestational_age(s) is not None:
        return s
    nums = _NUMBER.findall(re.sub(r"(?<=\d),(?=\d{3}\b)", "", s))
    return float(nums[-1]) if nums else None


def pick_item(items: list[FinalAnswerItem], calculator_name: str) -> FinalAnswerItem:
    """The block's entry for this row's calculator: the best name match, else the first entry."""
    from calcmate.scoring.metrics import name_score

    if len(items) == 1:
        return items[0]
    scored = [(name_score(i.calculator, calculator_name), -n, i) for n, i in enumerate(items)]
    best = max(scored, key=lambda x: x[:2])
    return best[2] if best[0] >= 85 else items[0]


class ModelSolver:
    def __init__(self, cfg: ModelSolverConfig, rows: list[BenchRow] | None = None):
        self.cfg = cfg
        self.name = f"model:{cfg.mode}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._cache: dict[str, Answer] = {}
        self._recorded: dict[str, Answer] = {}
        self._log: JsonlAppender | None = None
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
        if self.cfg.transcripts is not None:
            self._log = JsonlAppender(self.cfg.transcripts, key="task_id")
            for rec in self._log.records():  # resume: answers recorded by the same mode and model
                meta = rec.get("metadata") or {}
                if meta.get("mode") == self.cfg.mode and meta.get("model") == self.cfg.backend.model:
                    self._recorded[str(rec["task_id"])] = Answer(value=meta.get("answer"), reason=meta.get("reason"),
                                                                 details={"resumed": True})
        if self.cfg.mode == "tools":
            self._stop = asyncio.Event()
            ready = asyncio.get_running_loop().create_future()
            self._tools_task = asyncio.create_task(self._host_tools(ready))
            await ready

    async def _host_tools(self, ready: asyncio.Future) -> None:
        """Hold the MCP sessions open in this one task until close(): the mcp client's anyio
        scopes must be exited by the task that entered them."""
        from calcmate.tools.toolbox import Toolbox

        try:
            async with Toolbox.in_process(servers=("reference", "python")) as tools:
                self._specs = await toolset_specs(tools)  # the agent's ToolSpec, with the OpenAI schema
                self._tools = tools
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e)
            raise

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
        if str(row.row_id) in self._recorded:
            return self._recorded[str(row.row_id)]
        async with self._sem:
            if self.cfg.mode != "tools":
                msgs, t0 = self.messages(row), time.perf_counter()
                gen = await self.backend.chat(msgs)
                value = parse_answer(gen.text)
                tr = Trajectory(task_id=str(row.row_id), policy=self.policy.name,
                                messages=[*msgs, {"role": "assistant", "content": gen.text}], final_answer_text=gen.text,
                                rounds=1, finished=True, stop_reason="answer", prompt_tokens=gen.prompt_tokens,
                                completion_tokens=gen.completion_tokens, wall_s=time.perf_counter() - t0)
                ans = Answer(value=value, reason=None if value is not None else "no answer in the reply")
            else:
                task = Task(task_id=str(row.row_id), fuzzy_question=f"{row.patient_note}\n\n{row.question}\n\n{TOOLS_INSTRUCTION}")
                tr = await run_episode(task, self.policy, self._tools, NativeProtocol(),
                                       EpisodeConfig(max_rounds=self.cfg.max_rounds, max_format_retries=self.cfg.max_format_retries),
                                       specs=self._specs)
                details = {"rounds": tr.rounds, "tools": [c.tool for c in tr.tool_calls]}
                if tr.final_answer:
                    item = pick_item(tr.final_answer, row.calculator_name)
                    ans = Answer(value=answer_value(item.value), details={**details, "calculator": item.calculator})
                elif tr.finished:  # prose without a block: read it like a zero-shot reply
                    ans = Answer(value=parse_answer(tr.final_answer_text or ""), details=details)
                else:
                    ans = Answer(reason=f"episode ended without an answer: {tr.stop_reason}", details=details)
                if ans.value is None and ans.reason is None:
                    ans = Answer(reason="no answer in the final reply", details=details)
        if self._log is not None:
            tr.metadata.update(mode=self.cfg.mode, model=self.cfg.backend.model, calculator_id=row.calculator_id,
                               calculator=row.calculator_name, answer=ans.value, reason=ans.reason)
            self._log.append(tr.model_dump(mode="json"))
        return ans

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
                self._stop.set()
                await self._tools_task
            await self.backend.aclose()

        try:
            self._run(shutdown())
        finally:
            if self._log is not None:
                self._log.close()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
