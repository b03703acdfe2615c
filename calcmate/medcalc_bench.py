"""MedCalc-Bench: typed rows, Relevant-Entities -> calculator inputs, solvers and their one score.

A *solver* answers a row (``solve(row) -> Answer``); every solver is scored by the same
``score(row, answer)``, which applies MedCalc-Bench's published rule
(``calcmate.scoring.tolerance.medcalc_correct``). The ``registry`` solver feeds each row's
extracted "Relevant Entities" to the registered calculator: it measures the registry (and the
labels), not note reading. A ``model`` solver plugs in through the same protocol.

Rows we cannot answer -- no calculator for the id, a missing or impossible input, two entities that
give one input different values -- are *unsolvable*: counted wrong, with a reason, never a crash.

Two entity conventions, each recorded in the answer's ``notes`` and the report's ``entity_notes``
(never silent), and pinned on the dev fixtures by ``tests/test_medcalc_bench.py``:

* An entity that maps to no input of the row's calculator is *ignored* (e.g. PECARN head-injury
  entities extracted into a FeverPAIN row). MedCalc-Bench's own implementations read only the
  entities they know, so the label is defined without them; refusing the row would score the
  labels' extraction, not the calculator. Required inputs that are still missing make the row
  unsolvable as before, so an alias gap on a measured value cannot pass unnoticed.
* Two yes/no entities that feed one input (RCRI rows carry both 'History of cerebrovascular
  disease' and 'Cerebrovascular disease history') are merged: the criterion is present if either
  says so. Other duplicates must agree.
"""

from __future__ import annotations

import ast
import csv
import datetime as dt
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from calcmate.calculators import Calculator, CalculatorInputError, UnknownCalculatorError, normalize_name, registry
from calcmate.calculators.spec import is_not_mentioned
from calcmate.scoring.tolerance import medcalc_correct
from calcmate.units import decimal_mark_context, detect_decimal_mark

__all__ = [
    "Answer", "BenchRow", "CalcStats", "RegistrySolver", "Report", "Solver", "Unsolvable",
    "entities_to_inputs", "evaluate", "map_entities", "parse_entities", "read_csv", "score",
]

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # patient notes are long


# -- rows ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchRow:
    """One MedCalc-Bench row. ``truth``/``lower``/``upper`` are kept as the CSV's text."""

    row_id: str
    calculator_id: int
    calculator_name: str
    output_type: str
    question: str
    patient_note: str
    entities_text: str
    truth: str
    lower: str
    upper: str
    category: str = ""
    note_id: str = ""
    explanation: str = ""
    v1_truth: str | None = None  # "v1.0 Ground Truth Answer" in relabelled files

    @property
    def entities(self) -> dict[str, Any]:
        return parse_entities(self.entities_text)


_REQUIRED = ("Calculator ID", "Calculator Name", "Output Type", "Relevant Entities", "Ground Truth Answer")


def read_csv(path: str | Path) -> list[BenchRow]:
    """Read a MedCalc-Bench CSV (dev sample, relabelled dev, or the full test set)."""
    return list(iter_csv(path))


def iter_csv(path: str | Path) -> Iterator[BenchRow]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a MedCalc-Bench CSV, missing column(s) {missing}")
        for i, r in enumerate(reader, start=1):
            try:
                cid = int(r["Calculator ID"])
            except ValueError:
                raise ValueError(f"{path}: row {i}: field 'Calculator ID' is not an integer: {r['Calculator ID']!r}") from None
            yield BenchRow(
                row_id=(r.get("Row Number") or r.get("Unique ID") or str(i)).strip(),
                calculator_id=cid,
                calculator_name=r["Calculator Name"],
                output_type=r["Output Type"].strip().lower(),
                question=r.get("Question", ""),
                patient_note=r.get("Patient Note", ""),
                entities_text=r["Relevant Entities"],
                truth=r["Ground Truth Answer"],
                lower=r.get("Lower Limit", ""),
                upper=r.get("Upper Limit", ""),
                category=r.get("Category", ""),
                note_id=r.get("Note ID", ""),
                explanation=r.get("Ground Truth Explanation", ""),
                v1_truth=r.get("v1.0 Ground Truth Answer"),
            )


def parse_entities(text: str) -> dict[str, Any]:
    """The "Relevant Entities" cell: a Python-literal dict (``{'age': [87, 'years'], ...}``)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as e:
        raise ValueError(f"field 'Relevant Entities' is not a Python literal dict: {e}") from None
    if not isinstance(value, dict):
        raise ValueError(f"field 'Relevant Entities' is a {type(value).__name__}, not a dict")
    return value


# -- answers and the one scoring function ----------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """A solver's answer to one row; ``value is None`` with ``reason`` means unsolvable."""

    value: Any = None
    reason: str | None = None
    calculator_id: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # how the entities were read: ignored entities, merged duplicates

    @property
    def solved(self) -> bool:
        return self.value is not None


def score(row: BenchRow, answer: Answer) -> bool:
    """MedCalc-Bench's rule for this row (dates/gestational age exact, integers rounded, decimals in limits)."""
    if not answer.solved:
        return False
    return medcalc_correct(row.output_type, answer.value, row.truth, row.lower, row.upper)


class Solver(Protocol):
    """Anything that answers MedCalc-Bench rows. ``name`` appears in reports."""

    name: str

    def solve(self, row: BenchRow) -> Answer: ...


# -- Relevant Entities -> calculator inputs ------------------------------------------------------
class Unsolvable(Exception):
    """The row cannot be put to the calculator (the message says which entity or input)."""


_INDEX: dict[int, tuple[Calculator, dict[str, str]]] = {}


def _input_index(calc: Calculator) -> dict[str, str]:
    """normalize_name(any input name) -> input key (cached per calculator object)."""
    hit = _INDEX.get(id(calc))
    if hit is not None and hit[0] is calc:
        return hit[1]
    idx: dict[str, str] = {}
    for inp in calc.inputs:
        for n in inp.names():
            idx.setdefault(normalize_name(n), inp.key)
    _INDEX[id(calc)] = (calc, idx)
    return idx


def _merge(calc: Calculator, key: str, old: Any, new: Any, name: str, notes: list[str]) -> Any:
    """A second entity for the same input: yes/no reports are OR-ed (noted); other values must agree."""
    if isinstance(old, bool) and isinstance(new, bool):
        if old != new:
            notes.append(f"entities disagree on {calc.id} input {key!r} ({name!r} is {new}); "
                         "scored present because one reports it")
        return old or new
    if old == new:
        return old
    raise Unsolvable(f"entities give input {key!r} of {calc.id} twice with different values ({old!r}, {new!r})")


def _generic(calc: Calculator, entities: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    idx = _input_index(calc)
    out: dict[str, Any] = {}
    for name, value in entities.items():
        key = idx.get(normalize_name(name))
        if key is None:
            notes.append(f"ignored entity {name!r}: maps to no input of {calc.id}")
            continue
        if is_not_mentioned(value):  # 'Not mentinoed' (sic): not reported, as if the entity were absent
            notes.append(f"entity {name!r} is {value!r}: read as not reported")
            continue
        out[key] = _merge(calc, key, out[key], value, name, notes) if key in out else value
    return out


_BLACK = {"black", "african american", "black or african american", "african-american"}


def _mdrd(calc: Calculator, entities: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """``'Race': 'Black' | 'White' | ...``: MDRD's input is the race coefficient's indicator (Black or not).
    Levey 2006 applies ×1.212 to Black patients only, so any other reported race is 'not Black'."""
    ent = dict(entities)
    race = None
    for k in [k for k in ent if normalize_name(k) == "race"]:
        race = ent.pop(k)
    inputs = _generic(calc, ent, notes)
    if race is not None and not is_not_mentioned(race):
        if isinstance(race, bool):
            inputs["black_race"] = race
        elif isinstance(race, str) and race.strip():
            inputs["black_race"] = normalize_name(race) in {normalize_name(b) for b in _BLACK}
            notes.append(f"entity 'Race' is {race!r}: Black race {'yes' if inputs['black_race'] else 'no'}")
        else:
            raise Unsolvable(f"entity 'Race' should be a race such as 'Black' or 'White', got {race!r}")
    return inputs


def _strip_unit(value: Any) -> Any:
    return value[0] if isinstance(value, (list, tuple)) and len(value) == 2 else value


def _steroid(calc: Calculator, entities: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """``{'input steroid': ['PredniSONE PO', 45.8, 'mg'], 'target steroid': 'Hydrocortisone IV'}``."""
    src = entities.get("input steroid")
    dst = entities.get("target steroid")
    if not (isinstance(src, (list, tuple)) and len(src) == 3):
        raise Unsolvable(f"entity 'input steroid' should be [drug, dose, unit], got {src!r}")
    if dst is None:
        raise Unsolvable("entity 'target steroid' is missing")
    for name in sorted(set(entities) - {"input steroid", "target steroid"}):
        notes.append(f"ignored entity {name!r}: maps to no input of {calc.id}")
    return {"from_steroid": src[0], "dose": [src[1], src[2]], "to_steroid": dst}


def _mme(calc: Calculator, entities: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """``'<Drug> Dose': [30, 'mg']`` and ``'<Drug> Dose Per Day': [2, 'per day']`` per opioid.

    MedCalc-Bench labels every dose 'mg', including fentanyl patches (mcg/hr) and buccal
    fentanyl (mcg); its conversion factors are per those units, so the number is used as the
    drug's own dose unit (see docs/known-label-issues.md). Doses per day are counts.
    """
    return {k: _strip_unit(v) for k, v in _generic(calc, entities, notes).items()}


def _cockcroft_gault(calc: Calculator, entities: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """MedCalc-Bench's question fixes the weight: adjusted body weight if BMI ≥ 25, min(ideal,
    actual) if 18.5 ≤ BMI < 25, actual if BMI < 18.5. The registry's BMI/IBW/ABW compute it."""
    ent = dict(entities)
    height = ent.pop("height", None)
    inputs = _generic(calc, ent, notes)
    if height is None:
        return inputs  # no height: the weight as given
    reg = registry()
    try:
        w = reg.get("bmi").input("weight").coerce("bmi", inputs["weight"])
        bmi = reg.get("bmi")({"weight": w, "height": height}).value
        ibw = reg.get("ideal_body_weight")({"sex": inputs["sex"], "height": height}).value
        abw = reg.get("adjusted_body_weight")({"sex": inputs["sex"], "height": height, "weight": w}).value
    except KeyError as e:
        raise Unsolvable(f"missing input {e.args[0]!r} for the MedCalc-Bench weight rule") from None
    inputs["weight"] = w if bmi < 18.5 else min(ibw, w) if bmi < 25 else abw
    return inputs


Translator = Callable[[Calculator, Mapping[str, Any], list[str]], dict[str, Any]]
# MedCalc-Bench id -> explicit translation where entity keys are not plain input names.
TRANSLATORS: dict[int, Translator] = {2: _cockcroft_gault, 9: _mdrd, 24: _steroid, 49: _mme}


def map_entities(calc: Calculator, entities: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Map a row's entities onto ``calc``'s input keys, with notes on ignored or merged entities
    (raises Unsolvable with the reason)."""
    notes: list[str] = []
    fn = TRANSLATORS.get(calc.medcalc_bench_id or -1, _generic)
    return fn(calc, entities, notes), notes


def entities_to_inputs(calc: Calculator, entities: Mapping[str, Any]) -> dict[str, Any]:
    """Map a row's entities onto ``calc``'s input keys (raises Unsolvable with the reason)."""
    return map_entities(calc, entities)[0]


# -- the registry solver ----------------------------------------------------------------------------
def _answer_value(v: Any) -> Any:
    if isinstance(v, dt.date):
        return v.strftime("%m/%d/%Y")
    return v


class RegistrySolver:
    """Answers each row by running the registered calculator on its extracted entities."""

    name = "registry"

    def __init__(self, reg=None):
        self.reg = reg or registry()

    def solve(self, row: BenchRow) -> Answer:
        try:
            calc = self.reg.by_medcalc_id(row.calculator_id)
        except UnknownCalculatorError:
            return Answer(reason=f"no calculator registered for MedCalc-Bench id {row.calculator_id}")
        notes: list[str] = []
        try:
            # numerals in the entities are read with the note's decimal mark ("1,250" in an English note is 1250)
            with decimal_mark_context(detect_decimal_mark(row.patient_note)):
                inputs, notes = map_entities(calc, row.entities)
                result = calc(inputs)
        except (Unsolvable, CalculatorInputError, ValueError) as e:
            return Answer(reason=str(e), calculator_id=calc.id, notes=tuple(notes))
        return Answer(value=_answer_value(result.value), calculator_id=calc.id, details=dict(result.details),
                      notes=tuple(notes))


# -- evaluation -------------------------------------------------------------------------------------
class CalcStats(BaseModel):
    n: int = 0
    correct: int = 0
    accuracy: float = 0.0


class RowError(BaseModel):
    row: str
    calculator: str
    reason: str


class RowResult(BaseModel):
    row: str
    calculator: str
    answer: Any
    truth: str
    correct: bool


class Report(BaseModel):
    solver: str
    overall: CalcStats
    per_calculator: dict[str, CalcStats]
    errors: list[RowError]
    entity_notes: list[RowError] = []  # rows whose entities were partly ignored or merged (reason = the note)
    rows: list[RowResult] = []


def evaluate(rows: Iterable[BenchRow], solver: Solver, on_row: Callable[[BenchRow, Answer, bool], None] | None = None) -> Report:
    """Solve and score every row; per-calculator and overall accuracy, and why rows went unsolved."""
    per: dict[str, CalcStats] = {}
    errors: list[RowError] = []
    notes: list[RowError] = []
    results: list[RowResult] = []
    total = CalcStats()
    for row in rows:
        try:
            ans = solver.solve(row)
        except Exception as e:  # a solver bug is reported against the row, never fatal
            ans = Answer(reason=f"{type(e).__name__}: {e}")
        ok = score(row, ans)
        s = per.setdefault(row.calculator_name, CalcStats())
        s.n += 1
        total.n += 1
        s.correct += ok
        total.correct += ok
        if not ans.solved:
            errors.append(RowError(row=row.row_id, calculator=row.calculator_name, reason=ans.reason or "no answer"))
        notes.extend(RowError(row=row.row_id, calculator=row.calculator_name, reason=n) for n in ans.notes)
        results.append(RowResult(row=row.row_id, calculator=row.calculator_name, answer=_jsonable(ans.value),
                                 truth=row.truth, correct=ok))
        if on_row:
            on_row(row, ans, ok)
    for s in (*per.values(), total):
        s.accuracy = s.correct / s.n if s.n else 0.0
    return Report(solver=solver.name, overall=total, per_calculator=per, errors=errors, entity_notes=notes,
                  rows=results)


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return list(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    return v
