"""Patient sampler: input values for a workflow, consistent with the branch taken.

Each attempt draws one patient ``Profile`` (age, sex, weight, height, pregnancy) inside the
population every calculator of the workflow applies to, and derives every input that expresses a
profile attribute from it (numeric ages in any unit, age bands and criteria, sex choices, weight,
height, BMI, BSA: ``calcmate.synth.profile``), and a pool of vitals, blood gas and labs drawn with
it derives every input that is a measurement in any unit, a criterion over one, or a quantity
derived from them (MAP, P/F, GCS parts: ``calcmate.synth.measurements``), so all calculators
describe the same person. Other values come from clinically plausible ranges (a table for common
inputs; otherwise the inner part of the registry Input's allowed range), are shared across
calculators that read the same input key, and feed later calculators where the workflow says so.
The branch arm is chosen first and whole patients (profile and measurement pool together, never one
calculator's inputs alone) are re-drawn until the decider's registry value selects it (falling back
to the other arm, recorded, when the drawn patients never reach it). Ground truth is always the
registry's own computation.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from calcmate.calculators.registry import Registry
from calcmate.calculators.spec import Calculator, CalculatorInputError, Input, Result
from calcmate.synth.composer import Workflow
from calcmate.synth.measurements import Catalogue, Pool, default_catalogue, derive_measure, sample_pool
from calcmate.synth.profile import PatientModel, Profile, ProfileError, default_model, derive, sample_profile

# Typical ranges (canonical units of calcmate/calculators/_common.py) for a hospital population:
# wide enough to cross the usual decision thresholds, narrow enough to look like real patients.
PLAUSIBLE: dict[str, tuple[float, float]] = {
    "age": (18, 92), "weight": (45, 130), "height": (150, 195), "creatinine": (0.5, 4.5),
    "sodium": (118, 165), "potassium": (2.8, 6.5), "chloride": (85, 118), "bicarbonate": (8, 34),
    "albumin": (1.8, 5.0), "glucose": (60, 900), "bun": (6, 110), "heart_rate": (45, 150),
    "sbp": (70, 200), "dbp": (40, 115), "resp_rate": (8, 38), "temperature": (35.0, 40.5),
    "calcium": (6.5, 12.5), "ph": (6.95, 7.6), "paco2": (20, 80), "pao2": (45, 400), "fio2": (21, 100),
    "spo2": (78, 100), "platelets": (15, 450), "inr": (0.9, 4.5), "bilirubin": (0.3, 12),
    "hemoglobin": (6, 17), "hematocrit": (18, 52), "wbc": (1, 30), "gcs": (3, 15), "map": (45, 120),
    "lactate": (0.5, 10), "ast": (10, 500), "alt": (8, 500), "qt": (340, 560), "qt_interval": (340, 560),
    "magnesium": (1.0, 3.2), "phosphate": (1.0, 7.0), "triglycerides": (50, 600),
    "total_cholesterol": (120, 320), "hdl": (25, 90), "ldl": (50, 250),
}

# Inputs charted as whole numbers even where the calculator accepts decimals.
WHOLE = {"age", "heart_rate", "sbp", "dbp", "resp_rate", "gcs", "platelets", "spo2", "fio2", "map", "height"}

# Display spellings for canonical units the EHR would not print as-is.
DISPLAY_UNIT = {"1/min": "/min", "degC": "°C", "year": "years", "percent": "%", "month": "months",
                "day": "days", "week": "weeks"}


class SamplingError(ValueError):
    """No consistent patient was found for a workflow within the attempt budget."""


@dataclass
class Patient:
    values: dict[str, dict[str, Any]]  # calc id -> {input key: canonical value}
    results: dict[str, Result]  # calc id -> registry result (executed calculators only)
    arms: dict[str, str]  # decider id -> arm taken
    executed: list[str]
    fed: dict[str, dict[str, str]] = field(default_factory=dict)  # calc id -> {input key: source calc id}
    wanted_arms: dict[str, str] = field(default_factory=dict)
    attempts: int = 0
    profile: Profile | None = None  # the core attributes every calculator's inputs were derived from
    measurements: Pool | None = None  # the vitals and labs every measurement input was derived from


def _draw(inp: Input, rng: random.Random) -> Any:
    if inp.type == "bool":
        return rng.random() < 0.35
    if inp.type == "choice":
        return rng.choice(inp.choices).label if inp.choices else None
    if inp.type == "date":
        return dt.date(2025, 1, 1) + dt.timedelta(days=rng.randint(0, 700))
    lo, hi = PLAUSIBLE.get(inp.key, (None, None))
    if lo is not None and inp.min is not None:
        lo = max(lo, inp.min)
    if hi is not None and inp.max is not None:
        hi = min(hi, inp.max)
    if lo is None or hi is None or lo > hi:
        lo, hi = _inner_range(inp)
    for _ in range(30):  # within the cited physiological limits where the quantity has one
        x = rng.uniform(lo, hi)
        v = int(round(x)) if inp.type == "integer" or inp.key in WHOLE else _round_like_ehr(x)
        if _plausible(inp, v):
            return v
    return v


def _plausible(inp: Input, value: float) -> bool:
    """No value outside ``calcmate/synth/physiology.yaml`` for a quantity it covers (by key or label)."""
    from calcmate.synth.physiology import check_value

    for name in (inp.key, inp.label):
        try:
            if check_value(name, value, inp.unit) is not None:
                return False
        except Exception:  # noqa: BLE001 - a name or unit the table does not know: nothing to check
            continue
    return True


def _inner_range(inp: Input) -> tuple[float, float]:
    lo = inp.min if inp.min is not None else 0.0
    hi = inp.max if inp.max is not None else (lo + 100.0 if lo >= 0 else 100.0)
    span = hi - lo
    if lo > 0 and hi / lo > 50:  # very wide (orders of magnitude): stay in the lower decades
        return lo * 2, math.sqrt(lo * hi)
    return lo + 0.1 * span, lo + 0.6 * span


def _round_like_ehr(x: float) -> float:
    """Lab-style precision: about three significant figures."""
    if x == 0:
        return 0.0
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return round(x, min(digits, 2))


def sample_patient(wf: Workflow, reg: Registry, rng: random.Random, max_attempts: int = 300,
                   model: PatientModel | None = None, catalogue: Catalogue | None = None) -> Patient:
    """Draw inputs until every executed calculator computes and every branch takes its wanted arm."""
    model = model or default_model()
    cat = catalogue or default_catalogue()
    pop = wf.population(reg, model)
    if pop.empty:
        raise SamplingError(f"workflow {[s.calc_id for s in wf.steps]}: its calculators share no patient population")
    wanted = {b.decider: rng.choice(("then", "else")) for b in wf.branches}
    feeds = {(d.dst, d.quantity): d.src for d in wf.dependencies if d.kind == "feeds"}
    last_err = "no attempt"
    for flip in (False, True):
        want = {k: (("else" if v == "then" else "then") if flip else v) for k, v in wanted.items()}
        for attempt in range(1, max_attempts + 1):
            try:
                prof = sample_profile(pop, rng)
                p = _attempt(wf, reg, rng, feeds, want, prof, model, sample_pool(prof, rng), cat)
            except (CalculatorInputError, ProfileError, ArithmeticError, ValueError, TypeError) as e:
                last_err = str(e)
                continue
            if p is not None:
                p.wanted_arms = wanted
                p.attempts = attempt + (max_attempts if flip else 0)
                return p
            last_err = "decider value never selected the wanted arm"
    raise SamplingError(f"no consistent patient for workflow {[s.calc_id for s in wf.steps]}: {last_err}")


def _attempt(wf: Workflow, reg: Registry, rng: random.Random, feeds: dict, want: dict[str, str],
             profile: Profile, model: PatientModel, pool: Pool, cat: Catalogue) -> Patient | None:
    shared: dict[tuple, Any] = {}
    values: dict[str, dict[str, Any]] = {}
    results: dict[str, Result] = {}
    fed: dict[str, dict[str, str]] = {}
    arms: dict[str, str] = {}
    skip: set[str] = set()
    branches = {b.decider: b for b in wf.branches}
    key_count = Counter(_share_key(i) for st in wf.steps for i in reg.get(st.calc_id).inputs)
    for step in wf.steps:
        cid = step.calc_id
        if cid in skip:
            continue
        calc = reg.get(cid)
        vals: dict[str, Any] = {}
        for inp in calc.inputs:
            src = feeds.get((cid, inp.key))
            if src is not None and src in results:
                vals[inp.key] = _fed_value(results[src], inp)
                fed.setdefault(cid, {})[inp.key] = src
                continue
            if inp.optional and key_count[_share_key(inp)] < 2 and model.binding(calc, inp) is None \
                    and cat.binding(calc, inp) is None and rng.random() < 0.5:
                # left to the calculator's documented default: only a finding no other calculator of the
                # task asks about and no patient attribute or measurement fixes (one patient, one value)
                continue
            binding = model.binding(calc, inp)
            if binding is not None and not (binding.attr == "head_circumference" and profile.head_circumference_cm is None):
                vals[inp.key] = derive(binding, inp, profile)
                continue
            mb = cat.binding(calc, inp)
            if mb is not None:
                vals[inp.key] = derive_measure(mb, inp, pool, profile, cat)
                continue
            k = _share_key(inp)
            if k not in shared:
                shared[k] = _draw(inp, rng)
            vals[inp.key] = shared[k]
        res = calc(vals)  # raises CalculatorInputError on an inconsistent draw
        values[cid], results[cid] = dict(vals), res
        b = branches.get(cid)
        if b is not None:
            arm = b.arm(res.value)
            if arm != want[cid]:
                return None
            arms[cid] = arm
            skip.update(b.else_ if arm == "then" else b.then)
    return Patient(values, results, arms, wf.executed(arms), fed, profile=profile, measurements=pool)


def _share_key(inp: Input) -> tuple:
    """Inputs with the same key, type and options hold the same patient value."""
    return (inp.key, inp.type, inp.unit, tuple(c.label for c in inp.choices))


def _fed_value(res: Result, inp: Input) -> Any:
    v = res.value
    if inp.type in ("number", "integer") and isinstance(v, (int, float)):
        return v if res.unit is None or inp.unit is None else (v, res.unit)
    return v


def display_value(calc: Calculator, key: str, value: Any) -> str | int | float:
    """The ``value`` text of a task input: number with unit, choice label, Yes/No, ISO date."""
    inp = calc.input(key)
    if isinstance(value, tuple) and len(value) == 2:
        value, unit = value
        return f"{value:g} {DISPLAY_UNIT.get(unit, unit)}" if unit else value
    if inp.type == "bool":
        return "Yes" if value else "No"
    if inp.type == "date":
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if inp.type == "choice":
        return str(value)
    if isinstance(value, (int, float)) and inp.unit:
        return f"{value:g} {DISPLAY_UNIT.get(inp.unit, inp.unit)}"
    return value


def choice_score(calc: Calculator, key: str, value: Any) -> Any:
    """The points a choice label carries, as MedMCP-Calc's optional ``score``."""
    inp = calc.input(key)
    if inp.type != "choice":
        return None
    for c in inp.choices:
        if c.label == value and isinstance(c.value, (int, float)) and not isinstance(c.value, bool):
            return c.value
    return None
