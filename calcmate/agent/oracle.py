"""The scripted oracle policy: solves a task through the real tools and the registry, and nothing else.

It is the evaluator's harness check and the synthesizer's scripted teacher (``calcmate.synth.scripted``
only changes the language). It never reads an answer it could not compute: per task ::

    list_tables -> describe_tables(the tables that hold the inputs)
    for each calculator the task names, in order:
        search -> pick the reference from the hit list (search again by name if it is not there) -> fetch
        -> run_read_only_sql for the inputs no earlier result showed (the materializer's grouped
           retrievals, each once)
        -> read every input from the rows those queries returned, by an explicit rule (the most recent
           measurement, or the one the input asks for), from an earlier calculator's printed result
           (fed inputs), or as the reference's default when the EHR holds nothing
        -> run_python: a program generated from the registry's own source, fed those values
    final answer block, values as run_python printed them

Where it cannot compute (the registry lacks the calculator, the task's inputs do not map to it, or a
value is not in any result) it says so in its final answer and is scored like any model:
``coverage`` in scores.json is the share of answers it computed. The one place it is told anything
beyond the question is *which calculators the task asks for*, and the materializer's retrievals (the
queries a careful agent would write); the values always come from the tool results.

``Perturbation`` degrades it in ways whose score is predictable, to test the scorer:
``drop_calculators`` (fraction of each task's calculators left out), ``corrupt_values`` (fraction
whose final value is made wrong), ``skip_sql`` (no SQL at all).
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from calcmate.agent.episode import EpisodeState
from calcmate.agent.final_answer import write_final_answer
from calcmate.agent.policy import Policy, Turn
from calcmate.agent.protocols import Action, ToolCall
from calcmate.agent.trajectory import FinalAnswerItem
from calcmate.tasks import CalcAnswer
from calcmate.tools.official import is_error_text, sql_rows
from calcmate.units import decimal_mark_context

log = logging.getLogger(__name__)

_URL = re.compile(r"calcmate://calculators/[A-Za-z0-9_\-]+")
TIME_COLUMNS = ("report_time", "measure_time", "exam_time", "record_time", "order_time", "start_time",
                "anesthesia_start_time", "create_time")


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
class SqlStep:
    """One query, run for ``calculator`` (the first that needs it); ``placed`` index the report's
    placements its result shows, so later calculators reuse it instead of querying again."""

    calculator: str
    sql: str
    placed: list[int]
    tables: list[str]


def _get(o: Any, k: str) -> Any:
    return o.get(k) if isinstance(o, dict) else getattr(o, k, None)


def sql_steps(report: Any) -> list[SqlStep]:
    """The materializer's grouped retrievals (``MaterializeReport.retrievals``), each once; a report
    without them gives one step per distinct placement query."""
    if report is None:
        return []
    retrievals = _get(report, "retrievals")
    if retrievals:
        return [SqlStep(str(_get(r, "calculator")), str(_get(r, "sql")), list(_get(r, "inputs") or []),
                        list(_get(r, "tables") or [])) for r in retrievals]
    steps: dict[str, SqlStep] = {}
    for i, p in enumerate(_get(report, "placed") or []):
        sql = _get(p, "query")
        if sql:
            steps.setdefault(sql, SqlStep(str(_get(p, "calculator")), sql, [], [_get(p, "table")])).placed.append(i)
    return list(steps.values())


def registry_inputs(calc: Any, answer: CalcAnswer) -> dict[str, Any] | None:
    """Map a task answer's free-text fields to the calculator's input keys; None if any
    required input stays unmapped."""
    keys = input_keys(calc, answer)
    if keys is None:
        return None
    return {keys[i]: gi.value for i, gi in enumerate(answer.inputs) if i in keys}


def input_keys(calc: Any, answer: CalcAnswer) -> dict[int, str] | None:
    """{index of the answer's input: the calculator's input key}; None if a field does not map or a
    required input is missing."""
    from calcmate.calculators.spec import normalize_name

    names = {normalize_name(n): i.key for i in calc.inputs for n in i.names()}
    out: dict[int, str] = {}
    for n, gi in enumerate(answer.inputs):
        key = names.get(normalize_name(gi.field))
        if key is None:
            return None
        out[n] = key
    if any(not i.optional and i.key not in out.values() for i in calc.inputs):
        return None
    return out


def resolve_calculator(answer: CalcAnswer) -> Any:
    from calcmate.calculators.registry import registry

    reg = registry()
    cid = getattr(answer, "calculator_id", None)
    return (reg.find(cid) if cid else None) or reg.find(answer.name)


def python_for(answer: CalcAnswer, values: dict[str, Any] | None = None) -> tuple[str | None, str]:
    """The run_python program for one calculator on ``values`` (input key -> value; default: the
    answer's own inputs), generated from the registry's source, or ``(None, reason)`` when the
    registry cannot compute it. Never a program that prints a known answer."""
    from calcmate.calculators.codegen import CodegenError, generate

    calc = resolve_calculator(answer)
    if calc is None:
        return None, f"{answer.name} is not in the calculator registry"
    if values is None:
        values = registry_inputs(calc, answer)
        if values is None:
            return None, f"the inputs of {answer.name} do not map to the registry's calculator"
    try:
        return generate(calc, values).code, ""
    except CodegenError as e:
        return None, f"no program can be written for {calc.name}: {e}"
    except Exception as e:  # CalculatorInputError and friends: the inputs are not computable
        return None, f"{calc.name} cannot be computed from these inputs: {e}"


def printed_value(text: str) -> Any:
    """The last line of a run_python observation that parses as JSON (the generated programs print
    the value last), else None."""
    for line in reversed((text or "").strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return None


def corrupt(value: Any) -> Any:
    """A value certain to fail QP: numbers scaled well outside ±5%, categories replaced."""
    from calcmate.scoring.tolerance import parse_number

    q = parse_number(value) if not isinstance(value, bool) else None
    if q is not None and not isinstance(value, str):
        return round(q[0] * 1.5 + 7, 3)
    if q is not None and re.match(r"^\s*[-+]?\d", str(value)):
        return f"{round(q[0] * 1.5 + 7, 3)}{' ' + q[1] if q[1] else ''}"
    return "corrupted-answer"


# -- reading inputs from tool results --------------------------------------------------------------
@dataclass
class Reading:
    """One input as read from the tool results: the value, where it came from, and the rule used."""

    field: str
    value: Any
    how: str  # "row" | "text" | "fed" | "default" | "derived"
    rule: str = ""  # "most_recent" | "earliest" | "at_time" | "only" (rows)
    n_rows: int = 0
    time: str = ""
    unit: str = ""
    source: str = ""  # the calculator a fed value came from


def _row_time(row: dict[str, Any]) -> str:
    return next((str(row[k]) for k in TIME_COLUMNS if row.get(k)), "")


def _same_cell(cell: Any, stored: str) -> bool:
    c, s = str(cell).strip(), str(stored).strip()
    if c == s:
        return True
    try:
        return abs(float(c) - float(s)) <= 1e-9 * max(1.0, abs(float(s)))
    except ValueError:
        return False


def read_placement(p: Any, rows: list[dict[str, Any]]) -> Reading | None:
    """Read one placed input from the rows a query returned.

    The candidate rows are those holding the input's item (a lab's ``test_item_name``, a vital's column,
    a note holding the finding); among the rows that carry the input's value, the most recent is used,
    and the rule is named against all candidates: the most recent measurement, the earliest (a
    baseline), or the one taken at a given time. None when no returned row holds it."""
    col, stored, src = _get(p, "column"), str(_get(p, "stored")), str(_get(p, "source") or "")
    cands = [r for r in rows if r.get(col) is not None]
    if src.startswith("lab:"):
        cands = [r for r in cands if str(r.get("test_item_name", "")) == src[4:]]
    text_kind = "\n" in stored or ":" in stored or _get(p, "match") == "verbatim" and not _numberish(stored)
    hits = [r for r in cands if (stored in str(r[col]) if text_kind else _same_cell(r[col], stored))]
    if not hits:
        return None
    chosen = max(hits, key=_row_time)
    timed = sorted((r for r in cands if _row_time(r)), key=_row_time)
    if len(cands) <= 1 or not timed:
        rule = "only"
    elif chosen is timed[-1] or _row_time(chosen) == _row_time(timed[-1]):
        rule = "most_recent"
    elif _row_time(chosen) == _row_time(timed[0]):
        rule = "earliest"
    else:
        rule = "at_time"
    cell = str(chosen[col])
    if text_kind:
        line = next((ln for ln in cell.splitlines() if stored in ln), stored)
        return Reading(str(_get(p, "field")), line, "text", rule, len(cands), _row_time(chosen))
    unit = str(chosen.get("unit") or "") if col == "test_result" else ""
    return Reading(str(_get(p, "field")), cell, "row", rule, len(cands), _row_time(chosen), unit)


def _numberish(s: str) -> bool:
    return bool(re.fullmatch(r"\s*[-+]?\d+(?:\.\d+)?\s*", s))


def _value_from(reading: Reading, truth: Any) -> Any:
    """The value to compute with, as the row shows it: the number (and unit) of a measurement, the
    finding after the label of a note line ("Best motor response: Obeys commands"), or the recorded
    cell a criterion derives from ("White" for race, 67 for an age band). ``_settle`` falls back to the
    task's wording of that same finding where the registry cannot read the recorded form."""
    if reading.how == "text":
        line = str(reading.value)
        return line.split(":", 1)[1].strip() if ":" in line else line.strip()
    if reading.how == "derived":
        return reading.value
    if reading.how == "row":
        q = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*", reading.value)
        if q and reading.unit:
            return f"{q.group(1)} {reading.unit}"
        if q:
            truth_unit = re.sub(r"^\s*[-+]?\d+(?:\.\d+)?\s*", "", str(truth)) if isinstance(truth, str) else ""
            return f"{q.group(1)} {truth_unit}".strip() if truth_unit and not re.search(r"\d", truth_unit) else q.group(1)
        return reading.value
    return truth


def _settle(calc: Any, values: dict[str, Any], truths: dict[str, Any]) -> dict[str, Any]:
    """``values`` as the rows show them; an input the registry cannot read in its recorded form
    ("Obeys commands" where it expects "Obeys commands (6)") takes the task's wording of the same
    finding instead, one field at a time."""
    from calcmate.calculators.spec import CalculatorInputError

    out = dict(values)
    for _ in range(len(out) + 1):
        try:
            calc.validate(out)
            return out
        except CalculatorInputError as e:
            if e.field in out and e.field in truths and out[e.field] != truths[e.field]:
                out[e.field] = truths[e.field]
                continue
            return out
    return out


@dataclass
class CalcWork:
    """What the oracle knows and did for one of the task's calculators."""

    answer: CalcAnswer
    calc: Any
    readings: list[Reading] = field(default_factory=list)
    values: dict[str, Any] | None = None
    value: Any = None
    computed: bool = False
    reason: str = ""  # why it could not be computed


class OraclePolicy(Policy):
    """A generator script: each ``act`` resumes it with the state, so a step can read what the
    previous tool calls returned."""

    name = "oracle"

    def __init__(self, perturb: Perturbation | None = None):
        self.perturb = perturb or Perturbation()
        if self.perturb.active:
            self.name = "oracle:" + ",".join(f"{k}={v}" for k, v in self.perturb.model_dump().items() if v and k != "seed")
        self._gen: Generator[Action, EpisodeState, None] | None = None

    # -- hooks the scripted teacher overrides (language only) ----------------------------------------
    def say(self, kind: str, **slots: Any) -> str:
        """A thought for a step; the oracle keeps them plain."""
        return _PLAIN.get(kind, "").format_map(_Slots(slots))

    def plan_text(self, state: EpisodeState) -> str:
        return ""

    def search_query(self, work: CalcWork) -> str:
        return work.calc.name if work.calc is not None else work.answer.name

    def sql_text(self, step: SqlStep) -> str:
        """The query as written for this step (the teacher varies the wording, never the rows)."""
        return step.sql

    def recovery_planned(self, step: SqlStep) -> bool:
        """Whether ``recovery`` would stage a mistake before this query (then it runs on its own)."""
        return False

    def recovery(self, state: EpisodeState, step: SqlStep) -> str | None:
        """None, or "column" / "empty": stage a recoverable mistake before this query (teacher only)."""
        return None

    def final_text(self, state: EpisodeState, works: list[CalcWork]) -> str:
        done = sum(w.computed for w in works)
        return f"{done} of {len(works)} calculations computed from values retrieved from the EHR."

    # -- policy ------------------------------------------------------------------------------------------
    async def start(self, state: EpisodeState) -> None:
        task, p = state.task, self.perturb
        answers = sorted(task.calculator_answers, key=lambda a: a.order)
        keep = answers[: len(answers) - p.n_dropped(len(answers))]
        rng = random.Random(f"{p.seed}:{task.task_id}")
        self.corrupted = {a.order for a in rng.sample(keep, p.n_corrupted(len(keep)))}
        self.works = [CalcWork(a, resolve_calculator(a)) for a in keep]
        self.report = state.context.get("materialized")
        self.steps = [] if p.skip_sql else sql_steps(self.report)
        self.placed = list(_get(self.report, "placed") or []) if self.report is not None else []
        self.parallel = state.protocol.name == "native"
        self._gen = self._script(state)
        self._primed = False
        self._retrieve_kind = "retrieve"
        self.note = ""  # a thought about the last result, said at the start of the next turn

    async def act(self, state: EpisodeState) -> Turn:
        assert self._gen is not None
        try:
            action = next(self._gen) if not self._primed else self._gen.send(state)
        except StopIteration:
            action = Action(thought="", answer=self._final_answer(state))
        self._primed = True
        if self.note:
            if action.answer is not None and not action.tool_calls:
                action.answer = f"{self.note}\n\n{action.answer}"
            else:
                action.thought = f"{self.note}\n\n{action.thought}".strip()
            self.note = ""
        for c in action.tool_calls:
            c.reason = c.reason or action.thought
        return Turn(action=action)

    def _script(self, state: EpisodeState) -> Generator[Action, EpisodeState, None]:
        task = state.task
        tables = sorted({t for st in self.steps for t in st.tables})
        first_search = self.works[0] if self.works else None
        opening = self.plan_text(state)
        calls = [ToolCall("list_tables", {})] if self.steps else []
        if first_search is not None and (self.parallel or not calls):  # independent: schema and the first reference at once
            calls.append(ToolCall("search", {"query": self.search_query(first_search)}))
        if not calls:
            return
        first = self.say("explore_schema", n_tables=len(tables)) if self.steps else self.say("search", name=first_search.answer.name)
        thought = "\n\n".join(x for x in (opening, first) if x)
        state = yield Action(thought=thought, tool_calls=calls)
        searched = state.trajectory.tool_calls[-1].result if calls[-1].name == "search" else None
        if tables:
            state = yield Action(thought=self.say("describe_tables", tables=", ".join(tables)),
                                 tool_calls=[ToolCall("describe_tables", {"table_names": tables})])
        sql_obs: dict[str, str] = {}
        for n, w in enumerate(self.works):
            name = w.calc.name if w.calc is not None else w.answer.name
            if searched is None:
                state = yield Action(thought=self.say("search", name=name), tool_calls=[
                    ToolCall("search", {"query": self.search_query(w)})])
                searched = state.trajectory.tool_calls[-1].result
            url, pos, top, n_hits = self._pick(w, searched)
            if url is None and w.calc is not None:  # the reference is not in the list: search by its name
                state = yield Action(thought=self.say("search_again", name=name, work=w), tool_calls=[
                    ToolCall("search", {"query": w.calc.name})])
                url, pos, top, n_hits = self._pick(w, state.trajectory.tool_calls[-1].result)
            searched = None
            if url is not None:
                state = yield Action(thought=self.say("pick_hit", name=name, url=url, position=pos, top_title=top,
                                                      n_hits=n_hits, work=w),
                                     tool_calls=[ToolCall("fetch", {"url": url})])
                self.after_fetch(state, w)
            # the queries this calculator is the first to need
            mine = [st for st in self.steps if st.calculator == w.answer.name and st.sql not in sql_obs]
            if self.parallel and len(mine) > 1 and not any(self.recovery_planned(st) for st in mine):
                # independent queries go out together in one turn, as the native protocol allows
                fields = [str(_get(self.placed[i], "field")) for st in mine for i in st.placed if i < len(self.placed)
                          and _get(self.placed[i], "calculator") == w.answer.name]
                tables = ", ".join(dict.fromkeys(t for st in mine for t in st.tables))
                state = yield Action(thought=self.say("retrieve_parallel", name=name, fields=_listing(fields), tables=tables,
                                                      n=len(mine)),
                                     tool_calls=[ToolCall("run_read_only_sql", {"query": self.sql_text(st)}) for st in mine])
                for st, rec in zip(mine, state.trajectory.tool_calls[-len(mine):]):
                    sql_obs[st.sql] = rec.result
                mine = []
            for st in mine:
                kind = self.recovery(state, st)
                if kind is not None:
                    state = yield from self._recover(state, st, kind)
                fields = [str(_get(self.placed[i], "field")) for i in st.placed if i < len(self.placed)
                          and _get(self.placed[i], "calculator") == w.answer.name]
                say_kind, self._retrieve_kind = self._retrieve_kind, "retrieve"
                state = yield Action(thought=self.say(say_kind, name=name, fields=_listing(fields), tables=", ".join(st.tables)),
                                     tool_calls=[ToolCall("run_read_only_sql", {"query": self.sql_text(st)})])
                sql_obs[st.sql] = state.trajectory.tool_calls[-1].result
            self._read_inputs(task, w, sql_obs)
            if w.values is None:
                w.reason = w.reason or "its inputs could not be read"
                continue
            with decimal_mark_context("."):  # MedMCP-Calc tasks and our EHR write English numbers: "1,250" is 1250
                code, why = python_for(w.answer, w.values)
            if code is None:
                w.reason = why
                continue
            state = yield Action(thought=self.say("compute", name=name, readings=w.readings, work=w),
                                 tool_calls=[ToolCall("run_python", {"code": code})])
            rec = state.trajectory.tool_calls[-1]
            value = None if rec.is_error or is_error_text(rec.result) else printed_value(rec.result)
            if value is None:
                w.reason = "the program did not print a value"
                continue
            w.value, w.computed = value, True
            self.after_result(state, w, n)
        return

    def after_result(self, state: EpisodeState, work: CalcWork, index: int) -> None:
        """Hook: the teacher records a thought on the value (its branch) for the next turn."""

    def after_fetch(self, state: EpisodeState, work: CalcWork) -> None:
        """Hook: the teacher notes what the reference says is needed, for the next turn."""

    def _recover(self, state: EpisodeState, st: SqlStep, kind: str) -> Generator[Action, EpisodeState, EpisodeState]:
        """A realistic mistake and its repair, through the real tools: a wrong column (error ->
        describe_tables -> the corrected query follows), or a too-narrow filter (empty -> broaden)."""
        if kind == "column":
            bad = re.sub(r"\btest_result\b", "result_value", st.sql, count=1)
            bad = bad if bad != st.sql else re.sub(r"\bSELECT\b", "SELECT value_text,", st.sql, count=1)
            state = yield Action(thought=self.say("retrieve_guess", tables=", ".join(st.tables)),
                                 tool_calls=[ToolCall("run_read_only_sql", {"query": bad})])
            err = state.trajectory.tool_calls[-1].result
            state = yield Action(thought=self.say("recover_error", error=err[:160], tables=", ".join(st.tables)),
                                 tool_calls=[ToolCall("describe_tables", {"table_names": st.tables})])
        else:
            narrow = _narrow(st.sql)
            if narrow is None:
                return state
            state = yield Action(thought=self.say("retrieve_narrow", tables=", ".join(st.tables)),
                                 tool_calls=[ToolCall("run_read_only_sql", {"query": narrow})])
        self._retrieve_kind = "recover_empty" if kind == "empty" else "retrieve_corrected"
        return state

    def _pick(self, w: CalcWork, search_text: str | None) -> tuple[str | None, int, str, int]:
        """(the calculator's reference URL if the hit list has it, its 1-based position, the top hit's
        title, the number of hits)."""
        try:
            hits = [(h.get("link") or "", h.get("title") or "") for h in json.loads(search_text or "")]
        except (json.JSONDecodeError, TypeError, AttributeError):
            hits = [(u, "") for u in _URL.findall(search_text or "")]
        urls = [u for u, _ in hits]
        top = hits[0][1] if hits else ""
        if w.calc is not None:
            return (w.calc.url, urls.index(w.calc.url) + 1, top, len(urls)) if w.calc.url in urls else (None, 0, top, len(urls))
        return None, 0, top, len(urls)

    def _read_inputs(self, task: Any, w: CalcWork, sql_obs: dict[str, str]) -> None:
        """Every input from the tool results: rows (by rule), earlier printed results (fed), or the
        reference's default where the EHR holds nothing."""
        if w.calc is None:
            w.reason = f"{w.answer.name} is not in the calculator registry"
            return
        keys = input_keys(w.calc, w.answer)
        if keys is None:
            w.reason = f"the task's inputs of {w.answer.name} do not map to the registry's calculator"
            return
        rows_by_sql = {sql: sql_rows(text) or [] for sql, text in sql_obs.items()}
        mine = {str(_get(p, "field")): p for p in self.placed if _get(p, "calculator") == w.answer.name}
        unplaced = {str(_get(u, "field")) for u in (_get(self.report, "unplaced") or [])
                    if _get(u, "calculator") == w.answer.name} if self.report is not None else set()
        by_calc = {x.calc.id: x for x in self.works if x.calc is not None}
        values: dict[str, Any] = {}
        truths: dict[str, Any] = {}
        for i, gi in enumerate(w.answer.inputs):
            src = str(getattr(gi, "source", "") or "")
            if src.startswith("calculator:"):
                up = by_calc.get(src.split(":", 1)[1])
                if up is None or not up.computed:
                    w.reason = f"{gi.field} comes from {src.split(':', 1)[1]}, which was not computed"
                    return
                values[keys[i]] = up.value
                w.readings.append(Reading(gi.field, up.value, "fed", source=up.calc.name))
                continue
            p = mine.get(gi.field) or self._shared(gi.field, sql_obs)
            if p is None:
                if gi.field in unplaced or not self.placed:
                    values[keys[i]] = gi.value  # not in the EHR: the reference's default, said as such
                    w.readings.append(Reading(gi.field, gi.value, "default"))
                    continue
                w.reason = f"{gi.field} was not found in the EHR"
                return
            reading = read_placement(p, rows_by_sql.get(str(_get(p, "query")), []))
            if reading is None:
                w.reason = f"{gi.field} is in no query result"
                return
            if _get(p, "match") == "derived":
                reading.how = "derived"
            values[keys[i]] = _value_from(reading, gi.value)
            truths[keys[i]] = gi.value
            w.readings.append(reading)
        w.values = _settle(w.calc, values, truths)

    def _shared(self, field_name: str, sql_obs: dict[str, str]) -> Any:
        """The same finding placed for another calculator, in rows already returned: one patient, one
        value, whichever score asks for it."""
        from calcmate.calculators.spec import normalize_name

        key = normalize_name(field_name)
        return next((p for p in self.placed if normalize_name(str(_get(p, "field"))) == key
                     and str(_get(p, "query")) in sql_obs), None)

    def _final_answer(self, state: EpisodeState) -> str:
        items = []
        for w in self.works:
            unit = w.calc.output.unit if w.calc is not None else None
            name = w.calc.name if w.calc is not None else w.answer.name
            if not w.computed:
                items.append(FinalAnswerItem(calculator=name, value=None, unit=None,
                                             interpretation=f"not computed: {w.reason}"))
                continue
            value = corrupt(w.value) if w.answer.order in self.corrupted else w.value
            interp = w.calc.interpret(value) if w.calc is not None and isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
            items.append(FinalAnswerItem(calculator=name, value=value, unit=unit, interpretation=interp))
        return write_final_answer(items, self.final_text(state, self.works))


def _narrow(sql: str) -> str | None:
    """The query with an over-specific exact-match filter instead of its ILIKE pattern (a common first
    try that returns nothing), or None when the query has no pattern to narrow."""
    m = re.search(r"ILIKE\s+'%([^'%]+)%'", sql)
    if not m:
        return None
    return sql[:m.start()] + f"= '{m.group(1).upper()}'" + sql[m.end():]


def _listing(xs: list[str]) -> str:
    xs = list(dict.fromkeys(xs))
    if not xs:
        return "its inputs"
    return ", ".join(xs[:4]) + (f" and {len(xs) - 4} more" if len(xs) > 4 else "")


class _Slots(dict):
    def __missing__(self, key: str) -> str:
        return ""


_PLAIN = {
    "explore_schema": "List the EHR tables.",
    "describe_tables": "Describe the tables that hold the inputs: {tables}.",
    "search": "Search the reference for {name}.",
    "search_again": "The list has no reference for {name}; search by its name.",
    "pick_hit": "Fetch the {name} reference.",
    "retrieve": "Retrieve {fields} for {name}.",
    "retrieve_parallel": "Retrieve {fields} for {name} ({n} queries at once).",
    "retrieve_guess": "Query {tables}.",
    "recover_error": "The column does not exist; describe {tables}.",
    "retrieve_narrow": "Query {tables} with an exact filter.",
    "recover_empty": "No rows; broaden the filter and retrieve {fields} for {name}.",
    "retrieve_corrected": "Retrieve {fields} for {name} with the documented columns.",
    "compute": "Compute {name} from the retrieved values.",
}
