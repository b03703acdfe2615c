"""The scripted oracle policy: solves a task from its ground truth through the real tools.

It is the evaluator's harness check (it must score CS, EA and QP near 100 on tasks whose
calculators the registry has) and the synthesizer's scripted teacher (same code). Per task::

    list_tables -> describe_tables(tables that hold the inputs)
    for each ground-truth calculator, in order:
        search(name) -> fetch(best hit) -> run_read_only_sql for the inputs no earlier result showed
        (the materializer's grouped retrievals, each query once)
        -> run_python (a program generated from the registry's source that computes the value
           when the registry reproduces the answer, else the ground truth)
    final answer block (calcmate.agent.final_answer), values as run_python printed them

``Perturbation`` degrades it in ways whose score is predictable, to test the scorer:
``drop_calculators`` (fraction of each task's calculators left out: CS and QP fall to the
share kept), ``corrupt_values`` (fraction whose final value is made wrong: QP falls, CS and EA
stay), ``skip_sql`` (no SQL at all: EA falls to 0).
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from calcmate.agent.episode import EpisodeState
from calcmate.agent.policy import Policy, Turn
from calcmate.agent.protocols import Action, ToolCall
from calcmate.agent.trajectory import FinalAnswerItem
from calcmate.agent.final_answer import write_final_answer
from calcmate.tasks import CalcAnswer

log = logging.getLogger(__name__)

_URL = re.compile(r"calcmate://calculators/[A-Za-z0-9_\-]+")


class Perturbation(BaseModel):
    drop_calculators: float = Field(0.0, ge=0, le=1)
    corrupt_values: float = Field(0.0, ge=0, le=1)
    skip_sql: bool = False
    seed: int = 0

    def n_dropped(self, n: int) -> int:
        return math.floor(self.drop_calculators * n + 1e-9)

    def n_corrupted(self, n_kept: int) -> int:
        return math.floor(self.corrupt_values * n_kept + 1e-9)

    @property
    def active(self) -> bool:
        return bool(self.drop_calculators or self.corrupt_values or self.skip_sql)


@dataclass
class InputQuery:
    """One ground-truth input and the SQL that retrieves it (from the materializer's report)."""

    calculator: str
    field: str
    value: Any
    sql: str
    table: str | None = None


def input_queries(report: Any) -> list[InputQuery]:
    """The materializer's placements (``MaterializeReport.placed``) as InputQuery rows."""
    if report is None:
        return []
    rows = getattr(report, "placed", None)
    if rows is None:
        rows = report.get("placed", []) if isinstance(report, dict) else report
    out: list[InputQuery] = []
    for q in rows or []:
        get = (lambda k, q=q: q.get(k)) if isinstance(q, dict) else (lambda k, q=q: getattr(q, k, None))
        sql = get("query") or get("sql")
        if sql:
            out.append(InputQuery(str(get("calculator") or ""), str(get("field") or ""), get("value"), str(sql), get("table")))
    return out


@dataclass
class SqlStep:
    """One query, run for ``calculator`` (the first that needs it); ``fields`` are the (calculator,
    field) inputs its result shows, so later calculators reuse it instead of querying again."""

    calculator: str
    sql: str
    fields: list[tuple[str, str]]
    tables: list[str]


def sql_steps(report: Any) -> list[SqlStep]:
    """The materializer's grouped retrievals (``MaterializeReport.retrievals``), each once; a
    report without them gives one step per distinct placement query."""
    if report is None:
        return []
    get = lambda o, k: o.get(k) if isinstance(o, dict) else getattr(o, k, None)  # noqa: E731
    retrievals = None if isinstance(report, list) else get(report, "retrievals")
    if retrievals:
        placed = get(report, "placed") or []
        return [SqlStep(str(get(r, "calculator")), str(get(r, "sql")),
                        [(str(get(placed[i], "calculator")), str(get(placed[i], "field"))) for i in get(r, "inputs") or []],
                        list(get(r, "tables") or [])) for r in retrievals]
    steps: dict[str, SqlStep] = {}
    for q in input_queries(report):
        steps.setdefault(q.sql, SqlStep(q.calculator, q.sql, [], [q.table] if q.table else [])).fields.append((q.calculator, q.field))
    return list(steps.values())


def _retrieve_thought(fields: list[str], calculator: str) -> str:
    shown = ", ".join(fields[:3]) + (f" and {len(fields) - 3} more inputs" if len(fields) > 3 else "")
    return f"Retrieve {shown or 'the inputs'} for {calculator}."


def registry_inputs(calc: Any, answer: CalcAnswer) -> dict[str, Any] | None:
    """Map a ground-truth answer's free-text fields to the calculator's input keys; None if any
    required input stays unmapped."""
    from calcmate.calculators.spec import normalize_name

    names = {normalize_name(n): i.key for i in calc.inputs for n in i.names()}
    vals: dict[str, Any] = {}
    for gi in answer.inputs:
        key = names.get(normalize_name(gi.field))
        if key is None:
            return None
        vals[key] = gi.value
    if any(not i.optional and i.key not in vals for i in calc.inputs):
        return None
    return vals


def python_for(answer: CalcAnswer) -> tuple[str, bool]:
    """The run_python code for one calculator, and whether it computes the registry formula.

    Whenever the registry has the calculator, its inputs map, and its value agrees with the ground
    truth, the code is a self-contained program generated from the registry's own source
    (``calcmate.calculators.codegen``): it computes the result from the retrieved inputs, which is
    what the synthesizer's trajectories teach. Synthesized tasks are registry-computed, so they
    always get it. Otherwise (no such calculator, unmapped inputs, or a benchmark label the registry
    disagrees with, which must not cost the eval oracle QP) the code lists the inputs and prints
    the ground truth."""
    from calcmate.calculators.codegen import CodegenError, generate
    from calcmate.calculators.registry import registry
    from calcmate.scoring.tolerance import values_match

    reg = registry()
    cid = getattr(answer, "calculator_id", None)
    calc = (reg.find(cid) if cid else None) or reg.find(answer.name)
    inputs = registry_inputs(calc, answer) if calc is not None else None
    if calc is not None and inputs is not None:
        try:
            ok = values_match(calc(inputs).value, answer.final_answer)
        except Exception:  # inputs the registry rejects or cannot compute: the ground truth stands
            ok = False
        if ok:
            try:
                return generate(calc, inputs).code, True
            except CodegenError as e:
                log.warning("oracle: %s: no generated program (%s); printing the ground truth", answer.name, e)
    truth = json.dumps(answer.final_answer, ensure_ascii=False)
    listing = json.dumps({i.field: i.value for i in answer.inputs}, ensure_ascii=False, indent=1)
    code = f"# {answer.name}\nimport json\ninputs = {listing}\nvalue = {truth}\nprint(json.dumps(value, ensure_ascii=False))\n"
    return code, False


def _printed_value(text: str, fallback: Any) -> Any:
    for line in reversed((text or "").strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return fallback


def corrupt(value: Any) -> Any:
    """A value certain to fail QP: numbers scaled well outside ±5%, categories replaced."""
    from calcmate.scoring.tolerance import parse_number

    q = parse_number(value) if not isinstance(value, bool) else None
    if q is not None and not isinstance(value, str):
        return round(q[0] * 1.5 + 7, 3)
    if q is not None and re.match(r"^\s*[-+]?\d", str(value)):
        return f"{round(q[0] * 1.5 + 7, 3)}{' ' + q[1] if q[1] else ''}"
    return "corrupted-answer"


class OraclePolicy(Policy):
    name = "oracle"

    def __init__(self, perturb: Perturbation | None = None):
        self.perturb = perturb or Perturbation()
        if self.perturb.active:
            self.name = "oracle:" + ",".join(f"{k}={v}" for k, v in self.perturb.model_dump().items() if v and k != "seed")
        self._plan: list[Any] = []

    async def start(self, state: EpisodeState) -> None:
        task, p = state.task, self.perturb
        answers = sorted(task.calculator_answers, key=lambda a: a.order)
        keep = answers[: len(answers) - p.n_dropped(len(answers))]
        rng = random.Random(f"{p.seed}:{task.task_id}")
        self.corrupted = {a.order for a in rng.sample(keep, p.n_corrupted(len(keep)))}
        steps = [] if p.skip_sql else sql_steps(state.context.get("materialized"))
        self.keep = keep
        plan: list[Any] = []
        if steps:
            tables = sorted({t for st in steps for t in st.tables}) or None
            plan.append(("list_tables", {}, "List the EHR tables to see where the patient's data live."))
            if tables:
                plan.append(("describe_tables", {"table_names": tables}, "Inspect the columns of the tables that hold the inputs."))
        seen_sql: set[str] = set()
        for a in keep:
            plan.append(("search", {"query": a.name}, f"Find the reference for {a.name}."))
            plan.append(("fetch", a, f"Read the {a.name} reference: formula, inputs and interpretation."))
            for st in steps:  # each grouped query once, when the first calculator needing it comes up
                if st.calculator == a.name and st.sql not in seen_sql:
                    seen_sql.add(st.sql)
                    mine = [f for c, f in st.fields if c == a.name]
                    plan.append(("run_read_only_sql", {"query": st.sql}, _retrieve_thought(mine, a.name)))
            code, _ = python_for(a)
            plan.append(("run_python", {"code": code}, f"Compute {a.name} from the retrieved inputs.", a))
        plan.append(("final", None, ""))
        self._plan = plan
        self._values: dict[int, Any] = {}
        self._last_search = ""

    async def act(self, state: EpisodeState) -> Turn:
        # read the previous observation
        if state.trajectory.tool_calls:
            last = state.trajectory.tool_calls[-1]
            if last.tool == "search":
                self._last_search = last.result
            elif last.tool == "run_python" and self._pending is not None:
                self._values[self._pending.order] = _printed_value(last.result, self._pending.final_answer) if not last.is_error else self._pending.final_answer
        self._pending = None
        step = self._plan.pop(0) if self._plan else ("final", None, "")
        tool, args, thought = step[0], step[1], step[2]
        if tool == "final":
            return Turn(action=Action(thought="All calculators are computed.", answer=self._final_answer()))
        if tool == "fetch":
            args = {"url": self._best_url(args)}
        if tool == "run_python":
            self._pending = step[3]
        return Turn(action=Action(thought=thought, tool_calls=[ToolCall(tool, dict(args), reason=thought)]))

    _pending: CalcAnswer | None = None

    def _best_url(self, answer: CalcAnswer) -> str:
        from calcmate.calculators.registry import registry

        calc = registry().find(answer.name)
        urls = _URL.findall(self._last_search)
        if calc is not None and (calc.url in urls or not urls):
            return calc.url
        return urls[0] if urls else f"calcmate://calculators/{re.sub(r'[^a-z0-9]+', '_', answer.name.lower()).strip('_')}"

    def _final_answer(self) -> str:
        from calcmate.calculators.registry import registry

        items = []
        for a in self.keep:
            value = self._values.get(a.order, a.final_answer)
            if a.order in self.corrupted:
                value = corrupt(value)
            calc = registry().find(a.name)
            interp = None
            if calc is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                interp = calc.interpret(value)
            items.append(FinalAnswerItem(calculator=a.name, value=value, unit=calc.output.unit if calc else None,
                                         interpretation=interp))
        return write_final_answer(items, "Summary of the calculations, each computed from values retrieved from the EHR.")
