"""Is a task one patient? Every shared concept compared across all calculators' inputs of one task.

A task's calculators read the same person: a quantity stated twice must agree (sodium, creatinine in
any unit, weight, age), a yes/no criterion must agree with the measurement it is about ("SBP ≤ 100
mmHg: Yes" beside an SBP of 144), derived quantities must follow from their parts (MAP, GCS total),
and findings must be one state ("Active cancer: Yes" never beside "Present or previous malignancy:
No"; "Stairs: Independent" never beside a GCS of 3, a kidney "No chronic renal failure" never beside
dialysis). The findings and their states are data (``populations.yaml: findings``), shared with the
sampler that derives the inputs, so the synthesizer and this checker cannot drift apart.

``contradictions(task)`` reads only the task: calculator answers with a ``calculator_id`` the registry
knows are checked through the registry's input metadata (``check_measurements``, ``check_consistency``);
findings are matched on the free-text field of any task, benchmark or synthesized.
"""

from __future__ import annotations

import math
from typing import Any

from calcmate.tasks import Task

_YES = ("yes", "true", "present", "positive")
_NO = ("no", "false", "absent", "negative", "none")


def _yes_no(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    t = str(v).strip().lower()
    if t.startswith(_YES):
        return True
    if t in _NO or t.startswith(("no ", "no,", "no.", "no (")):
        return False
    return None


def _fed(inp: Any) -> bool:
    return str(getattr(inp, "source", "") or "").startswith("calculator:")


def _registry_values(task: Task) -> tuple[dict[str, dict[str, Any]], dict[str, Any], set[tuple[str, str]]]:
    """calc id -> {input key: value as the registry reads it}, for answers naming a registry calculator."""
    from calcmate.calculators.registry import registry
    from calcmate.synth.sampler import DISPLAY_UNIT
    from calcmate.units import parse_quantity

    reg = registry()
    values: dict[str, dict[str, Any]] = {}
    calcs: dict[str, Any] = {}
    skip: set[tuple[str, str]] = set()
    for a in task.calculator_answers:
        cid = getattr(a, "calculator_id", None)
        try:
            calc = reg.get(cid) if cid else None
        except Exception:
            calc = None
        if calc is None:
            continue
        by_label = {i.label: i for i in calc.inputs}
        vals = values.setdefault(cid, {})
        calcs[cid] = calc
        for x in a.inputs:
            inp = by_label.get(x.field)
            if inp is None:
                continue
            if _fed(x):
                skip.add((cid, inp.key))
            v = x.value
            if inp.type == "bool":
                v = _yes_no(v)
                if v is None:
                    continue
            elif inp.type in ("number", "integer") and isinstance(v, str):
                try:
                    num, unit = parse_quantity(v)
                except ValueError:
                    continue
                shown = DISPLAY_UNIT.get(inp.unit, inp.unit) if inp.unit else None
                v = num if not unit or unit == shown or unit == inp.unit else (num, unit)
            elif inp.type == "date":
                continue
            vals[inp.key] = v
    return values, calcs, skip


def _measured(values: dict[str, dict[str, Any]], calcs: dict[str, Any], skip: set) -> dict[str, float]:
    """One value per pool quantity the inputs state (canonical units), GCS from its parts when no total."""
    from calcmate.synth.measurements import default_catalogue

    cat = default_catalogue()
    out: dict[str, float] = {}
    parts: dict[str, int] = {}
    for cid, vals in values.items():
        calc = calcs[cid]
        for key, v in vals.items():
            if (cid, key) in skip:
                continue
            b = cat.binding(calc, calc.input(key))
            if b is None:
                continue
            if b.kind == "number" and not isinstance(v, bool):
                x, unit = (v if isinstance(v, tuple) else (v, None))
                if isinstance(x, (int, float)):
                    try:
                        out.setdefault(b.quantity, cat.quantities[b.quantity].from_unit(float(x), unit or calc.input(key).unit))
                    except Exception:
                        continue
            elif b.kind == "gcs_component":
                pts = next((c.value for c in calc.input(key).choices if c.label == v), None)
                if isinstance(pts, int):
                    parts.setdefault(b.component, pts)
    if "gcs" not in out and len(parts) == 3:
        out["gcs"] = float(sum(parts.values()))
    return out


def _findings(task: Task, measured: dict[str, float]) -> list[str]:
    """Each finding one state across the task, and a state its measurements allow."""
    from calcmate.synth.profile import default_model

    model = default_model()
    said: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for a in task.calculator_answers:
        for x in a.inputs:
            if _fed(x) or x.value is None:
                continue
            yn = _yes_no(x.value)
            b = model.finding_binding(x.field, "bool" if yn is not None else "choice", None if yn is not None else [str(x.value)])
            if b is None:
                continue
            states = dict(b.options).get("true" if yn else "false") if yn is not None else b.options[0][1]
            said.setdefault(b.finding, []).append((f"{a.name}: {x.field} = {x.value!r}", states))
    out: list[str] = []
    for name, items in said.items():
        f = model.findings[name]
        left = set(f.states)
        for where, states in items:
            if not states:
                out.append(f"{name}: {where} describes no living patient")
                continue
            if not left & states:
                out.append(f"{name}: {where} contradicts {[w for w, _ in items if w != where]}")
                break
            left &= states
        else:
            fits = [s for s in left if all(lo <= measured[q] <= hi for q, (lo, hi) in f.limits.get(s, {}).items() if q in measured)]
            if left and not fits:
                shown = {q: measured[q] for s in left for q in f.limits.get(s, {}) if q in measured}
                out.append(f"{name}: {[w for w, _ in items]} (states {sorted(left)}) contradict the measurements {shown}")
    return out


def contradictions(task: Task) -> list[str]:
    """Every disagreement between the task's calculator inputs about its one patient (empty: consistent)."""
    from calcmate.synth.measurements import check_measurements
    from calcmate.synth.profile import check_consistency

    values, calcs, skip = _registry_values(task)
    out: list[str] = []
    measured: dict[str, float] = {}
    if values:
        own = {c: {k: v for k, v in vals.items() if (c, k) not in skip} for c, vals in values.items()}
        out += [f"patient: {p}" for p in check_consistency(own, calcs)]
        sex, age, weight = _profile_facts(own, calcs)
        out += [f"measurement: {p}" for p in check_measurements(values, calcs, sex, age, weight, skip)]
        measured = _measured(values, calcs, skip)
    out += _findings(task, measured)
    return out


def _profile_facts(values: dict[str, dict[str, Any]], calcs: dict[str, Any]) -> tuple[str | None, int | None, float | None]:
    """Sex, completed years and weight (kg) as the inputs state them, for criteria that depend on them."""
    from calcmate.synth.profile import default_model
    from calcmate.units import convert

    model = default_model()
    sex = age = weight = None
    for cid, vals in values.items():
        calc = calcs[cid]
        for key, v in vals.items():
            b = model.binding(calc, calc.input(key))
            if b is None:
                continue
            x, unit = (v if isinstance(v, tuple) else (v, None))
            unit = unit or calc.input(key).unit
            try:
                if b.attr == "sex" and sex is None:
                    sex = (dict(b.sexes).get(v) if calc.input(key).type != "bool" else
                           (b.sexes[0][1] if v else ({"male", "female"} - {b.sexes[0][1]}).pop()))
                elif b.attr == "age" and age is None and isinstance(x, (int, float)):
                    age = int(math.floor(convert(float(x), unit or "year", "year") + 1e-9))
                elif b.attr == "weight" and weight is None and isinstance(x, (int, float)):
                    weight = convert(float(x), unit, "kg") if unit else float(x)
            except Exception:
                continue
    return sex, age, weight

