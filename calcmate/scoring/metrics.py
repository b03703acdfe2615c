"""MedMCP-Calc metrics (appendix A.2) for one task and over a run.

Per task, with the ground-truth ``calculator_answers`` as denominators:

* **TF** (task finished): a valid final answer within the round limit (the released code does
  not compute TF; this is our explicit definition).
* **CS** (calculator selection): ground-truth calculators matched by a predicted one; a match is
  the same registry calculator (ids, aliases, bundles), the same normalised name, or a rapidfuzz
  ``token_set_ratio`` at or above ``fuzzy_threshold``. One prediction matches at most one truth.
* **QP** (quantitative precision): ground-truth results matched by a predicted value under
  ``calcmate.scoring.tolerance.values_match`` (±5% decimals, exact integers, normalised
  categories, units parsed). Not conditional on CS: a truth whose name went unmatched may still
  be met by an unassigned prediction's value.
* **EA** (EHR access): ground-truth input values found, normalised, in the agent's SQL results.

Averages are per task, then over tasks (as in the paper). docs/scoring.md says where these
deterministic scores differ from the official LLM-judged ones.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field
from rapidfuzz import fuzz

from calcmate.agent.tools import CATEGORY
from calcmate.agent.trajectory import FinalAnswerItem, Trajectory
from calcmate.calculators.spec import normalize_name
from calcmate.scoring.tolerance import parse_number, values_match
from calcmate.tasks import Task
from calcmate.tools.official import is_error_text, sql_rows
from calcmate.units import UnitError, convert

TOOL_KINDS = ("sql", "python", "search", "fetch")


class TaskScore(BaseModel):
    task_id: str
    domain: str | None = None
    tf: bool = False
    cs: float = 0.0
    qp: float = 0.0
    ea: float = 0.0
    n_calculators: int = 0
    cs_hits: int = 0
    qp_hits: int = 0
    ea_found: int = 0
    ea_total: int = 0
    extra_calculators: int = 0
    tool_calls: dict[str, int] = Field(default_factory=dict)
    rounds: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    format_errors: int = 0
    extraction: str = "none"
    details: list[dict[str, Any]] = Field(default_factory=list)


# -- names -------------------------------------------------------------------------------------
def _registry_ids(name: str) -> set[str]:
    from calcmate.calculators.registry import UnknownCalculatorError, registry

    try:
        return {c.id for c in registry().resolve(name)}
    except (UnknownCalculatorError, KeyError):
        return set()


def name_score(pred: str, truth: str) -> float:
    """100 for the same calculator (registry or normalised name), else the fuzzy ratio."""
    a, b = normalize_name(pred), normalize_name(truth)
    if not a or not b:
        return 0.0
    if a == b:
        return 100.0
    ia, ib = _registry_ids(pred), _registry_ids(truth)
    if ia and ib and ia & ib:
        return 100.0
    return float(fuzz.token_set_ratio(a, b))


def match_names(preds: list[str], truths: list[str], threshold: float = 85.0) -> dict[int, int]:
    """Greedy one-to-one assignment truth index -> prediction index, best pairs first."""
    pairs = sorted(((name_score(p, t), ti, pi) for ti, t in enumerate(truths) for pi, p in enumerate(preds)), reverse=True)
    out: dict[int, int] = {}
    used: set[int] = set()
    for score, ti, pi in pairs:
        if score < threshold:
            break
        if ti in out or pi in used:
            continue
        out[ti] = pi
        used.add(pi)
    return out


def item_matches(item: FinalAnswerItem, truth: Any, rel_tol: float = 0.05) -> bool:
    cands: list[Any] = [item.value]
    if item.unit and isinstance(item.value, (int, float, str)):
        cands.append(f"{item.value} {item.unit}")
    if item.interpretation:
        cands.append(item.interpretation)
    return any(values_match(c, truth, rel_tol) for c in cands)


# -- EHR access --------------------------------------------------------------------------------
_NUM = re.compile(r"(?<![\d.])[-+]?\d+(?:\.\d+)?")  # "140-220" is 140 and 220, not 140 and -220
_ALT_UNITS = ("kg", "lb", "g", "cm", "in", "m", "degC", "degF", "mg/dL", "umol/L", "mmol/L", "g/dL", "g/L", "mL", "L")


class SqlEvidence:
    """The text of every successful SQL result of a trajectory, indexed for value lookup."""

    def __init__(self, traj: Trajectory):
        texts = [c.result for c in traj.tool_calls if CATEGORY.get(c.tool) == "sql" and c.tool not in ("list_tables", "describe_tables")
                 and not c.is_error and not is_error_text(c.result)]
        self.raw = "\n".join(texts)
        self.norm = " " + normalize_name(self.raw) + " "
        self.numbers = [float(x) for x in _NUM.findall(self.raw.replace(",", ""))]

    def has_number(self, v: float, rel: float = 0.005) -> bool:
        return any(abs(n - v) <= max(rel * abs(v), 1e-6) for n in self.numbers)

    def has_text(self, text: str) -> bool:
        k = normalize_name(text)
        if not k:
            return False
        if f" {k} " in self.norm:
            return True
        return len(k) >= 8 and fuzz.partial_ratio(k, self.norm) >= 92

    def contains(self, value: Any, field: str | None = None) -> bool:
        """Is ``value`` (a ground-truth input, e.g. "1.4 mg/dL") in the SQL results? ``field``
        names the analyte for molar conversions (creatinine mg/dL <-> umol/L), and marks an age
        criterion ("Age": "65-74", "Age ≥ 75 years": "No"), found when a returned age meets it."""
        if value is None or not self.raw:
            return False
        if self._contains(value, field):
            return True
        if field and re.search(r"\b(black|african)\b", normalize_name(field)) and str(value).strip().lower() in (
                "yes", "no", "true", "false"):  # "Black race: Yes" against a recorded race/ethnicity
            black = bool(re.search(r"\b(black|african)\b", self.norm))
            recorded = black or bool(re.search(r"\b(white|caucasian|asian|hispanic|latino|other race|american indian|"
                                               r"pacific islander|multiracial)\b", self.norm))
            return recorded and black == (str(value).strip().lower() in ("yes", "true"))
        return bool(field) and _is_age_field(field) and any(_age_meets(value, field, a) for a in self.ages)

    @property
    def ages(self) -> list[float]:
        """Ages in years from result columns named like ``patient_age`` (unit from ``*age_unit``)."""
        if getattr(self, "_ages", None) is None:
            self._ages = _result_ages(self.raw)
        return self._ages

    def _contains(self, value: Any, field: str | None) -> bool:
        if isinstance(value, bool):
            return self.has_text("yes" if value else "no") or self.has_text(str(value))
        s = str(value).strip()
        q = parse_number(value)
        if q is not None and not _has_words_beyond_unit(s, q[1]):
            v, unit = q
            if self.has_number(v):
                return True
            if unit:
                analyte = _analyte(field)
                for alt in _ALT_UNITS:
                    try:
                        if self.has_number(convert(v, unit, alt, analyte), rel=0.01):
                            return True
                    except (UnitError, ValueError, TypeError):
                        continue
            return False
        if self.has_text(s):
            return True
        main = re.sub(r"\(.*?\)", " ", s).strip()  # "2 (Moderate slowing ...)" -> "2", inner text
        inner = " ".join(re.findall(r"\((.*?)\)", s))
        if main and main != s and parse_number(main) is not None and self._contains(main, field):
            return True  # "4.7 mmol/L (≥4.6 category)": the measurement itself
        return any(self.has_text(x) for x in (main, inner) if x and len(normalize_name(x)) >= 4)


_AGE_YEARS = {"year": 1.0, "month": 12.0, "week": 52.18, "day": 365.25}
_AGE_WORDS = {"neonate": (0, 28 / 365.25), "newborn": (0, 28 / 365.25), "infant": (0, 1), "toddler": (1, 3),
              "child": (1, 12.99), "adolescent": (12, 17.99), "pediatric": (0, 17.99), "paediatric": (0, 17.99),
              "adult": (18, 200), "elderly": (65, 200), "older adult": (65, 200)}
_CMP = re.compile(r"(≥|>=|>|≤|<=|<)\s*(\d+(?:\.\d+)?)\s*(years?|yrs?|months?|weeks?|days?)?", re.I)


def _is_age_field(field: str) -> bool:
    f = normalize_name(field)
    return bool(re.search(r"\bage\b", f)) and not re.search(r"\b(gestation\w*|postmenstrual|corrected|bone|vessel)\b", f)


def _result_ages(raw: str) -> list[float]:
    """Ages (in years) in SQL results with an age column: official JSON rows, or ``col | col`` tables."""
    out: list[float] = []
    for line in raw.splitlines():
        for row in sql_rows(line) or []:
            keys = {k.lower(): k for k in row}
            age_k = next((k for lk, k in keys.items() if re.fullmatch(r"(\w+_)?age", lk)), None)
            if age_k is None:
                continue
            unit_k = next((k for lk, k in keys.items() if re.fullmatch(r"(\w+_)?age_unit", lk)), None)
            try:
                age = float(row[age_k])
            except (TypeError, ValueError):
                continue
            unit = str(row[unit_k]).lower() if unit_k and row[unit_k] else "years"
            out.append(age / next((v for k, v in _AGE_YEARS.items() if unit.startswith(k)), 1.0))
    age_i = unit_i = None
    width = 0
    for line in raw.splitlines():
        cells = [c.strip().lower() for c in line.split(" | ")]
        heads = [i for i, c in enumerate(cells) if re.fullmatch(r"(\w+_)?age", c)]
        if heads:
            age_i, width = heads[0], len(cells)
            unit_i = next((i for i, c in enumerate(cells) if re.fullmatch(r"(\w+_)?age_unit", c)), None)
            continue
        if age_i is None or len(cells) != width:
            age_i = None
            continue
        try:
            age = float(cells[age_i])
        except ValueError:
            continue
        unit = cells[unit_i] if unit_i is not None else "years"
        out.append(age / next((v for k, v in _AGE_YEARS.items() if unit.startswith(k)), 1.0))
    return out


def _years(n: float, unit: str | None) -> float:
    return n / next((v for k, v in _AGE_YEARS.items() if (unit or "year").lower().startswith(k)), 1.0)


def _cmp(age: float, op: str, n: float) -> bool:
    return {"≥": age >= n, ">=": age >= n, ">": age > n, "≤": age <= n, "<=": age <= n, "<": age < n}[op]


def _age_meets(value: Any, field: str, age: float) -> bool:
    """Does an age (years) satisfy a ground-truth age criterion: a range ("65-74", "2 to 3 years"),
    a bound ("≥75"), a category ("Adult"), or yes/no to the field's bound ("Age ≥ 75 years": "No")?"""
    s = str(value).strip().lower()
    yes, no = re.match(r"^(yes|true|present)\b", s), re.match(r"^(no|false|absent)\b", s)
    m = _CMP.search(field)
    if m and (yes or no):
        return _cmp(age, m.group(1), _years(float(m.group(2)), m.group(3))) == bool(yes)
    m = re.match(r"^(\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(\d+(?:\.\d+)?)\s*(years?|yrs?|months?|weeks?|days?)?", s)
    if m:
        lo, hi = _years(float(m.group(1)), m.group(3)), _years(float(m.group(2)), m.group(3))
        return lo <= age < hi + _years(1, m.group(3))  # "65-74" holds through the day before 75
    m = _CMP.match(s)
    if m:
        return _cmp(age, m.group(1), _years(float(m.group(2)), m.group(3)))
    if any(lo <= age <= hi for word, (lo, hi) in _AGE_WORDS.items() if re.search(rf"\b{word}\b", s)):
        return True
    m = _CMP.search(s)  # a band label's own bound: "Child (<18 years)" holds for a 2-month-old
    return bool(m) and _cmp(age, m.group(1), _years(float(m.group(2)), m.group(3)))


def _analyte(field: str | None) -> str | None:
    from calcmate.units import ANALYTES

    if not field:
        return None
    words = normalize_name(field).split()
    return next((w for w in words if w in ANALYTES), None)


def _has_words_beyond_unit(s: str, unit: str | None) -> bool:
    rest = _NUM.sub(" ", s, count=1)
    if unit:
        rest = rest.replace(unit, " ")
    return bool(re.search(r"[A-Za-z]{3,}", rest))


# -- per task ----------------------------------------------------------------------------------
def tool_counts(traj: Trajectory) -> dict[str, int]:
    c = Counter(CATEGORY.get(t.tool, "other") for t in traj.tool_calls)
    return {k: c.get(k, 0) for k in (*TOOL_KINDS, "other")}


def _task_finished(traj: Trajectory, items: list[FinalAnswerItem], extraction: str) -> bool:
    """TF: the episode ended with a final answer within the round limit, and that answer could be read
    (at least one calculator result extracted). Text that yields nothing (e.g. a degenerate model's
    whitespace or escapes) is not a valid final answer. A judge outage is not held against the model."""
    return traj.finished and (bool(items) or extraction == "judge_failed")


def score_task(task: Task, traj: Trajectory | None, items: list[FinalAnswerItem] | None = None,
               extraction: str = "block", fuzzy_threshold: float = 85.0, rel_tol: float = 0.05) -> TaskScore:
    """Score one task; ``items`` default to the trajectory's deterministic extraction."""
    from calcmate.scoring.extract import extract_items

    truths = task.calculator_answers
    domain = task.domain.value if task.domain else None
    if traj is None:
        return TaskScore(task_id=task.task_id, domain=domain, n_calculators=len(truths),
                         ea_total=sum(len(a.inputs) for a in truths))
    if items is None:
        items, extraction = extract_items(traj) if traj.finished else ([], "none")
    assign = match_names([i.calculator for i in items], [a.name for a in truths], fuzzy_threshold)
    used = set(assign.values())
    details: list[dict[str, Any]] = []
    qp_hits = 0
    for ti, a in enumerate(truths):
        pi = assign.get(ti)
        hit = pi is not None and item_matches(items[pi], a.final_answer, rel_tol)
        if not hit and pi is None:  # QP is not conditional on CS
            for pj, it in enumerate(items):
                if pj not in used and item_matches(it, a.final_answer, rel_tol):
                    hit, pi = True, pj
                    used.add(pj)
                    break
        qp_hits += hit
        details.append({"calculator": a.name, "truth": a.final_answer, "name_match": ti in assign,
                        "predicted": None if pi is None else items[pi].model_dump(), "value_match": hit})
    ev = SqlEvidence(traj)
    inputs = [i for a in truths for i in a.inputs]
    found = sum(ev.contains(i.value, i.field) for i in inputs)
    n = len(truths)
    return TaskScore(
        task_id=task.task_id, domain=domain, tf=_task_finished(traj, items, extraction),
        cs=len(assign) / n if n else 0.0, qp=qp_hits / n if n else 0.0,
        ea=found / len(inputs) if inputs else 0.0, n_calculators=n, cs_hits=len(assign), qp_hits=qp_hits,
        ea_found=found, ea_total=len(inputs), extra_calculators=max(0, len(items) - len(assign)),
        tool_calls=tool_counts(traj), rounds=traj.rounds, prompt_tokens=traj.prompt_tokens,
        completion_tokens=traj.completion_tokens, format_errors=traj.format_errors, extraction=extraction, details=details,
    )


# -- over a run --------------------------------------------------------------------------------
def _summary(scores: list[TaskScore]) -> dict[str, Any]:
    n = len(scores)
    if not n:
        return {"n_tasks": 0}
    mean = lambda xs: sum(xs) / n  # noqa: E731
    return {
        "n_tasks": n,
        "TF": round(100 * mean([s.tf for s in scores]), 2),
        "CS": round(100 * mean([s.cs for s in scores]), 2),
        "EA": round(100 * mean([s.ea for s in scores]), 2),
        "QP": round(100 * mean([s.qp for s in scores]), 2),
        "tool_calls_per_task": {k: round(mean([s.tool_calls.get(k, 0) for s in scores]), 2) for k in (*TOOL_KINDS, "other")},
        "extra_calculators_per_task": round(mean([s.extra_calculators for s in scores]), 2),
        "rounds_per_task": round(mean([s.rounds for s in scores]), 2),
        "prompt_tokens_per_task": round(mean([s.prompt_tokens for s in scores]), 1),
        "completion_tokens_per_task": round(mean([s.completion_tokens for s in scores]), 1),
        "total_prompt_tokens": sum(s.prompt_tokens for s in scores),
        "total_completion_tokens": sum(s.completion_tokens for s in scores),
        "format_errors_per_task": round(mean([s.format_errors for s in scores]), 2),
        "extraction": dict(Counter(s.extraction for s in scores)),
    }


def aggregate(scores: Iterable[TaskScore]) -> dict[str, Any]:
    """Overall and per-domain metrics in percent, plus Table-3 tool counts and token/round counts."""
    scores = list(scores)
    by_domain: dict[str, list[TaskScore]] = defaultdict(list)
    for s in scores:
        by_domain[s.domain or "Unknown"].append(s)
    return {"overall": _summary(scores), "per_domain": {d: _summary(v) for d, v in sorted(by_domain.items())}}
