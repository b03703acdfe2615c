"""Clinical pathways: the calculators a clinician uses for a presentation, their order, and the
published decision rules that branch between them.

Composing tasks from random calculators taught nothing clinical ("suicide risk" scored with ten
cardiology scores, a branch on a random band of a random score, GCS read backwards). Tasks are now
built from ``pathways.yaml``: each taxonomy category names its pathways, each pathway lists steps in
clinical order and the rules (with their source) that branch it. Loading checks every id against the
registry and every rule against the decider's polarity (``calcmate.calculators.meta``), so a rule
cannot be written backwards. ``coherence_issues`` judges any finished task against the same data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from calcmate.calculators.meta import load_meta
from calcmate.calculators.registry import Registry, registry
from calcmate.calculators.spec import normalize_name
from calcmate.synth.profile import DAYS_PER_YEAR, Population

DEFAULT_PATHWAYS = Path(__file__).with_name("pathways.yaml")
def _cited(v: str) -> str:
    """A rule or pathway cites its source with a year (guideline or paper, year)."""
    if not _YEAR.search(v):
        raise ValueError(f"source {v!r} needs a year (guideline or paper, year)")
    return v


_YEAR = re.compile(r"\b(19|20)\d\d\b")
Cited = Annotated[str, Field(min_length=8), AfterValidator(_cited)]

# The patient a task describes, and who that is in profile terms (age in days, sexes, pregnancy).
NEONATAL_DAYS = 28.0
CLASS_POPULATION: dict[str, Population] = {
    "adult": Population(18 * DAYS_PER_YEAR, 120 * DAYS_PER_YEAR, pregnant=False),
    "paediatric": Population(NEONATAL_DAYS, 18 * DAYS_PER_YEAR, pregnant=False),
    "neonatal": Population(0.0, NEONATAL_DAYS, pregnant=False),
    "pregnancy": Population(15 * DAYS_PER_YEAR, 50 * DAYS_PER_YEAR, frozenset({"female"}), pregnant=True),
}
# populations.yaml group a category names -> the patient class of its tasks
GROUP_CLASS = {"neonate": "neonatal", "infant": "paediatric", "toddler": "paediatric", "pediatric": "paediatric",
               "obstetric": "pregnancy", "adult": "adult", "geriatric": "adult", "older_woman": "adult", "any": "adult",
               "from_2y": "adult"}


class Rule(BaseModel):
    """One published decision rule: ``value(decider) <op> threshold`` selects an arm."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    decider: str
    when: tuple[Literal[">=", "<", "=="], float | str]
    true_is: Literal["worse", "better"]
    if_true: tuple[str, ...] = ()
    if_false: tuple[str, ...] = ()
    action: str
    source: Cited


    @model_validator(mode="after")
    def _shape(self) -> "Rule":
        op, t = self.when
        if (op == "==") != isinstance(t, str):
            raise ValueError(f"when {self.when}: '==' takes a category label, '>=' and '<' a number")
        if set(self.if_true) & set(self.if_false) or self.decider in (*self.if_true, *self.if_false):
            raise ValueError("the arms must be disjoint and must not contain the decider")
        if not self.ge_arm:
            raise ValueError(f"the side of {op} {t} with the higher values (or the matching label) needs a calculator")
        return self

    @property
    def op(self) -> str:
        return self.when[0]

    @property
    def threshold(self) -> float | str:
        return self.when[1]

    @property
    def ge_arm(self) -> tuple[str, ...]:
        """Calculators used when the value is at/above the threshold (or matches the label)."""
        return self.if_false if self.op == "<" else self.if_true

    @property
    def lt_arm(self) -> tuple[str, ...]:
        return self.if_true if self.op == "<" else self.if_false

    @property
    def worse_arm(self) -> Literal["then", "else"]:
        """The arm of the composed ``>=``/``==`` branch that the sicker patient takes."""
        true_is_ge = self.op != "<"
        return "then" if (self.true_is == "worse") == true_is_ge else "else"


class Pathway(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    source: Cited
    steps: tuple[str, ...]
    rules: tuple[str, ...] = ()


    @field_validator("steps")
    @classmethod
    def _unique(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v or len(set(v)) != len(v):
            raise ValueError("steps must be non-empty and name each calculator once")
        return v


class PathwayFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: dict[str, Rule]
    pathways: dict[str, Pathway]


@dataclass(frozen=True)
class Pathways:
    """The validated data: rules and pathways by id."""

    rules: dict[str, Rule]
    pathways: dict[str, Pathway]

    def calculators(self, pathway_id: str) -> list[str]:
        """A pathway's calculators in clinical order: its steps, each rule's arms after its decider and
        after any step whose result they read."""
        from calcmate.synth.composer import feeds

        reg = registry()
        p = self.pathways[pathway_id]
        out = list(p.steps)
        for rid in p.rules:
            r = self.rules[rid]
            for a in (*r.if_true, *r.if_false):
                if a in out or reg.find(a) is None:
                    continue
                after = [out.index(r.decider)] + [i for i, x in enumerate(out) if reg.find(x) is not None
                                                  and feeds(reg.get(x), reg.get(a))]
                out.insert(max(after) + 1, a)
        return out

    def union(self, pathway_ids: list[str] | tuple[str, ...]) -> list[str]:
        out: list[str] = []
        for pid in pathway_ids:
            out += [c for c in self.calculators(pid) if c not in out]
        return out

    def rules_of(self, pathway_ids: list[str] | tuple[str, ...]) -> list[tuple[str, Rule]]:
        seen: list[str] = []
        for pid in pathway_ids:
            seen += [r for r in self.pathways[pid].rules if r not in seen]
        return [(r, self.rules[r]) for r in seen]


def load_pathways(path: str | Path | None = None, reg: Registry | None = None) -> Pathways:
    """Read and validate the pathway file against the registry and the clinical metadata."""
    if path is None and reg is None:
        return _default()
    return _load(Path(path) if path else DEFAULT_PATHWAYS, reg if reg is not None else registry())


@lru_cache(maxsize=1)
def _default() -> Pathways:
    return _load(DEFAULT_PATHWAYS, registry())


def _load(p: Path, reg: Registry) -> Pathways:
    data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    try:
        f = PathwayFile.model_validate(data)
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None
    ids = {c.id for c in reg}
    meta = load_meta()
    problems: list[str] = []
    for rid, r in f.rules.items():
        for c in (r.decider, *r.if_true, *r.if_false):
            if c not in ids:
                problems.append(f"rules.{rid}: {c!r} is not a registry id")
        if r.decider not in ids or r.decider not in meta:
            continue
        side = meta[r.decider].worse_side(r.op, r.threshold)
        want = "true" if r.true_is == "worse" else "false"
        if side is None:
            problems.append(f"rules.{rid}: the polarity of {r.decider} ({meta[r.decider].polarity}) cannot confirm "
                            f"which side of {r.op} {r.threshold} is worse")
        elif side != want:
            problems.append(f"rules.{rid}: says the {'true' if want == 'true' else 'false'} side of {r.op} {r.threshold} "
                            f"is worse, but {r.decider} is {meta[r.decider].polarity} (reversed branch)")
        if r.op == "==":
            labels = {normalize_name(b.match) for b in reg.get(r.decider).bands if b.match is not None}
            if normalize_name(str(r.threshold)) not in labels:
                problems.append(f"rules.{rid}: {r.threshold!r} is not an output category of {r.decider}")
    for pid, pw in f.pathways.items():
        for c in pw.steps:
            if c not in ids:
                problems.append(f"pathways.{pid}: step {c!r} is not a registry id")
        for rid in pw.rules:
            if rid not in f.rules:
                problems.append(f"pathways.{pid}: unknown rule {rid!r}")
            elif f.rules[rid].decider not in pw.steps:
                problems.append(f"pathways.{pid}: rule {rid!r} decides on {f.rules[rid].decider!r}, which is not a step")
    if problems:
        raise ValueError(f"{p}: " + "; ".join(problems))
    return Pathways(dict(f.rules), dict(f.pathways))


def patient_class(group: str | None) -> str:
    """The patient class (meta population) of a category's tasks from its populations.yaml group."""
    return GROUP_CLASS.get(group or "adult", "adult")


# -- checking a finished task -----------------------------------------------------------------------
_AGE_VALUE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(years?|months?|weeks?|days?)\s*$", re.I)
_DAYS = {"year": DAYS_PER_YEAR, "month": DAYS_PER_YEAR / 12, "week": 7.0, "day": 1.0}


def _task_calc_ids(task: Any, reg: Registry) -> list[str]:
    plan = task.plan or {}
    if plan.get("executed"):
        return list(plan["executed"])
    out = []
    for a in task.calculator_answers:
        cid = getattr(a, "calculator_id", None)
        c = reg.find(cid) if cid else reg.find(a.name)
        if c is not None:
            out.append(c.id)
    return out


def coherence_issues(task: Any, reg: Registry | None = None, tax: Any = None,
                     data: Pathways | None = None) -> dict[str, Any]:
    """Off-pathway calculators, polarity (branch direction) errors and population mismatches of one task.

    Works from the task alone (``plan`` metadata where present, else names and category), so it can
    judge any task, old or new. Returns counts and lists; empty lists mean a coherent task.
    """
    from calcmate.synth.taxonomy import load_taxonomy

    reg = reg if reg is not None else registry()
    data = data if data is not None else load_pathways(reg=None if reg is registry() else reg)
    plan = task.plan or {}
    meta = load_meta()
    cat_name = plan.get("category") or task.task_scenario
    cat = None
    try:
        cat = (tax if tax is not None else _default_taxonomy(load_taxonomy)).get(cat_name)
    except KeyError:
        pass
    allowed = set(data.union(list(cat.pathways))) if cat is not None and cat.pathways else set()
    calcs = _task_calc_ids(task, reg)
    off = [c for c in calcs if c not in allowed]
    cls = plan.get("population") or patient_class(cat.population if cat is not None else None)

    population_mismatches: list[str] = []
    steps = [s["calc_id"] for s in plan.get("steps", [])] or calcs
    for c in dict.fromkeys([*steps, *calcs]):
        m = meta.get(c)
        if m is None:
            population_mismatches.append(f"{c}: no clinical metadata")
        elif cls not in m.populations:
            population_mismatches.append(f"{c} is not validated for a {cls} patient (populations: {', '.join(m.populations)})")
    pop = CLASS_POPULATION.get(cls)
    for a in task.calculator_answers:
        for i in a.inputs:
            field = normalize_name(str(i.field))
            mt = _AGE_VALUE.match(str(i.value))
            if pop is not None and field.startswith("age") and mt:
                per = _DAYS[mt.group(2).lower().rstrip("s")]
                lo = float(mt.group(1)) * per  # a completed age: [n, n + 1) units
                if lo + per <= pop.lo_days or lo >= pop.hi_days:
                    population_mismatches.append(f"{a.name}: {i.field} = {i.value} is outside a {cls} patient")
            if "pregnan" in field and str(i.value).strip().lower() in ("yes", "true") and cls != "pregnancy":
                population_mismatches.append(f"{a.name}: {i.field} = {i.value} in a {cls} (non-pregnant) task")

    polarity_errors = [e for bd in plan.get("branches", []) for e in _branch_errors(bd, data, meta)]
    n = len(calcs)
    return {
        "category": cat_name,
        "population": cls,
        "calculators": n,
        "on_pathway": n - len(off),
        "on_pathway_share": (n - len(off)) / n if n else 1.0,
        "off_pathway": off,
        "polarity_errors": polarity_errors,
        "population_mismatches": population_mismatches,
    }


def _branch_errors(bd: dict[str, Any], data: Pathways, meta: dict) -> list[str]:
    dec, op, t = bd.get("decider"), bd.get("op"), bd.get("threshold")
    then, els = set(bd.get("then") or ()), set(bd.get("else") or ())
    m = meta.get(dec)
    if m is None:
        return [f"branch on {dec}: no clinical metadata"]
    errs: list[str] = []
    side = m.worse_side(op, t) if op in (">=", "==") else None
    worse = {"true": "then", "false": "else"}.get(side or "")
    if worse is None:
        errs.append(f"branch on {dec} {op} {t}: its polarity ({m.polarity}) cannot say which arm is worse")
    elif bd.get("worse_arm") and bd["worse_arm"] != worse:
        errs.append(f"branch on {dec} {op} {t}: plan says the {bd['worse_arm']} arm is worse, polarity says {worse}")
    rid = bd.get("rule")
    cands = [(rid, data.rules[rid])] if rid in data.rules else [
        (k, r) for k, r in data.rules.items() if r.decider == dec and _same_threshold(r, op, t)]
    if not cands:
        return errs + [f"branch on {dec} {op} {t} follows no published rule"]
    for k, r in cands:
        if not _same_threshold(r, op, t):
            continue
        if then & set(r.lt_arm) or els & set(r.ge_arm):
            errs.append(f"branch on {dec} {op} {t}: arms reversed against rule {k} ({r.source})")
        elif not (then <= set(r.ge_arm) and els <= set(r.lt_arm)):
            errs.append(f"branch on {dec} {op} {t}: arms {sorted(then)} / {sorted(els)} are not rule {k}'s")
        return errs
    return errs + [f"branch on {dec} {op} {t}: threshold differs from rule {rid}"]


def _same_threshold(r: Rule, op: Any, t: Any) -> bool:
    if r.op == "==" or op == "==":
        return r.op == op == "==" and normalize_name(str(r.threshold)) == normalize_name(str(t))
    try:
        return abs(float(r.threshold) - float(t)) < 1e-9
    except (TypeError, ValueError):
        return False


_TAX: list[Any] = []


def _default_taxonomy(loader: Any) -> Any:
    if not _TAX:
        _TAX.append(loader())
    return _TAX[0]
