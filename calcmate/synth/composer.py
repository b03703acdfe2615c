"""Task composer: a scenario workflow of registry calculators taken from the category's clinical
pathways, with the dependencies between them and a branch from a published decision rule.

Random composition taught a template, not medicine (a suicide-risk task scored with cardiology
scores, a branch on a random band, GCS read backwards), so the structure comes from data:

* **pathways** (``pathways.yaml``): the calculators a clinician uses for the presentation, in order;
  at least nine in ten of a task's calculators are its category's, and here all of them are;
* **branch** (a "triggers" dependency): a rule of those pathways, e.g. CURB-65 >= 2 -> PSI and
  SMART-COP; composed as ``value >= threshold`` (or ``== label``), a ``<`` rule with its arms swapped,
  and the arm a sicker patient takes is recorded (``worse_arm``) and checked against the polarity;
* **population**: the category's patient class (adult, paediatric, neonatal, pregnancy); only
  calculators validated for it (``calcmate.calculators.meta``) are used, and the profile population
  (``calcmate.synth.profile``) of all of them must intersect so one patient can be drawn;
* **feeds** (X's ``produces`` names an input of Y, X before Y) and **shares** (same input) edges.

A ``Workflow`` is pure structure; the patient sampler fills in values and picks the branch taken.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Literal

from calcmate.calculators.meta import applies
from calcmate.calculators.registry import Registry, registry
from calcmate.calculators.spec import Calculator, normalize_name
from calcmate.synth.pathways import CLASS_POPULATION, Pathways, Rule, load_pathways, patient_class
from calcmate.synth.profile import Population, PatientModel, default_model, population, population_of
from calcmate.synth.taxonomy import Category
from calcmate.units import UnitError, convert

Role = Literal["pre", "decider", "then", "else", "post"]


class CompositionError(ValueError):
    """No workflow satisfying the constraints can be built for a category."""


@dataclass
class Step:
    calc_id: str
    role: Role


@dataclass
class Dependency:
    src: str
    dst: str
    kind: Literal["feeds", "triggers", "shares"]
    quantity: str | None = None  # the input key fed or shared


@dataclass
class Branch:
    """``if value(decider) <op> threshold: then-arm else: else-arm``.

    ``op`` is ">=" for numeric outputs or "==" for category outputs (threshold is then a label).
    """

    decider: str
    op: Literal[">=", "=="]
    threshold: float | str
    then: list[str]
    else_: list[str]
    then_label: str = ""  # the band label on the 'then' side, for the text writers
    else_label: str = ""
    rule: str = ""  # the pathways.yaml rule id, its source and action
    source: str = ""
    action: str = ""
    worse_arm: str = ""  # "then" or "else": the arm a sicker patient takes

    def arm(self, value: Any) -> Literal["then", "else"]:
        """Which arm a decider value selects."""
        from calcmate.calculators.spec import normalize_name

        if self.op == "==":
            return "then" if normalize_name(str(value)) == normalize_name(str(self.threshold)) else "else"
        try:
            return "then" if float(value) >= float(self.threshold) else "else"
        except (TypeError, ValueError):
            return "else"


@dataclass
class Workflow:
    category: Category
    steps: list[Step]  # in execution order; both arms listed, only one executes
    dependencies: list[Dependency] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    patient: str = "adult"  # the patient class: adult, paediatric, neonatal, pregnancy
    pathways: list[str] = field(default_factory=list)  # the category's pathways
    primary_pathway: str | None = None

    def executed(self, arms: dict[str, str]) -> list[str]:
        """Ids executed when each branch (keyed by decider id) takes the arm given."""
        skip: set[str] = set()
        for b in self.branches:
            skip.update(b.else_ if arms.get(b.decider) == "then" else b.then)
        return [s.calc_id for s in self.steps if s.calc_id not in skip]

    def population(self, reg: Registry, model: PatientModel | None = None) -> Population:
        """The patients the scenario names and every calculator of the workflow (both arms) applies to."""
        model = model or default_model()
        pop = model.groups[self.category.population] if self.category.population else Population()
        pop = pop & CLASS_POPULATION.get(self.patient, Population())
        return pop & population_of((reg.get(s.calc_id) for s in self.steps), model)

    def to_plan(self) -> dict[str, Any]:
        """JSON-able plan metadata (stored in ``Task.plan``)."""
        return {
            "category": self.category.name,
            "domain": self.category.domain.value,
            "population": self.patient,
            "pathways": list(self.pathways),
            "primary_pathway": self.primary_pathway,
            "steps": [asdict(s) for s in self.steps],
            "dependencies": [asdict(d) for d in self.dependencies],
            "branches": [_branch_dict(b) for b in self.branches],
        }


def _branch_dict(b: Branch) -> dict[str, Any]:
    d = asdict(b)
    d["else"] = d.pop("else_")
    return d


def branch_from_dict(d: dict[str, Any]) -> Branch:
    return Branch(d["decider"], d["op"], d["threshold"], list(d["then"]), list(d.get("else", [])),
                  d.get("then_label", ""), d.get("else_label", ""), d.get("rule", ""), d.get("source", ""),
                  d.get("action", ""), d.get("worse_arm", ""))


# -- what a calculator can do in a workflow ---------------------------------------------------------
def _numeric(c: Calculator) -> bool:
    return c.output.type in ("decimal", "integer")


def thresholds(c: Calculator) -> list[tuple[float, str, str]]:
    """(boundary, label below, label at/above) for each finite band boundary of a numeric calculator."""
    if not _numeric(c):
        return []
    bands = [b for b in c.bands if b.match is None]
    out: list[tuple[float, str, str]] = []
    for b in bands:
        if b.lo is None:
            continue
        below = next((x.label for x in bands if x.hi is not None and abs(x.hi - b.lo) < 1e-12), "")
        out.append((float(b.lo), below, b.label))
    return out


def can_decide(c: Calculator) -> bool:
    if _numeric(c):
        return bool(thresholds(c))
    return c.output.type == "category" and sum(1 for b in c.bands if b.match is not None) >= 2


def input_keys(c: Calculator) -> set[str]:
    return {i.key for i in c.inputs}


_GOAL_WORDS = {"target", "goal", "desired"}
_FEEDABLE: dict[str, tuple[tuple, frozenset[str]]] = {}  # calc id -> (its inputs, keys a result may fill)


def _feedable(y: Calculator) -> frozenset[str]:
    hit = _FEEDABLE.get(y.id)
    if hit is None or hit[0] is not y.inputs:
        keys = frozenset(i.key for i in y.inputs if not set(normalize_name(i.label).split()) & _GOAL_WORDS)
        hit = _FEEDABLE[y.id] = (y.inputs, keys)
    return hit[1]


@lru_cache(maxsize=None)
def _unit_fits(src: str | None, dst: str | None) -> bool:
    if not src or not dst:
        return True
    try:
        convert(1.0, src, dst)
    except (UnitError, ValueError):
        return False
    return True


def feeds(x: Calculator, y: Calculator) -> list[str]:
    """Input keys of ``y`` that ``x``'s result can fill: never a goal such as "Target BMI", nor an input
    whose unit the result's cannot convert to (an indexed eGFR in mL/min/1.73 m² is no GFR in mL/min)."""
    if x.id == y.id or not x.produces:
        return []
    keys = _feedable(y)
    return [q for q in x.produces if q in keys and _unit_fits(x.output.unit, y.input(q).unit)]


# -- composition ------------------------------------------------------------------------------------
def compose(category: Category, reg: Registry, rng: random.Random, min_calcs: int = 4, max_calcs: int = 10,
            else_skip_prob: float = 0.3, mean_calcs: float = 9.3, data: Pathways | None = None) -> Workflow:
    """Compose one workflow for ``category`` from its clinical pathways; raises CompositionError when
    they cannot give ``min_calcs`` calculators for one patient.

    The patient class (adult, paediatric, neonatal, pregnancy) comes from the category; only calculators
    validated for it (``calcmate.calculators.meta``) are used. One published rule of the pathways is the
    branch, with its arms on the sides the rule gives. The executed count is drawn around ``mean_calcs``
    (the paper's 9.05 per task) and kept within [min_calcs, max_calcs]. ``else_skip_prob`` is kept for
    callers of the former composer; published rules fix their own arms.
    """
    if not 1 <= min_calcs <= max_calcs:
        raise ValueError(f"need 1 <= min_calcs ({min_calcs}) <= max_calcs ({max_calcs})")
    data = data if data is not None else load_pathways(reg=None if reg is registry() else reg)
    paths = [p for p in category.pathways if p in data.pathways]
    cls = patient_class(category.population)
    base = CLASS_POPULATION[cls]
    if category.population:
        base = base & default_model().groups[category.population]
    if paths:
        primary = rng.choice(paths)
        order = data.union([primary] + [p for p in paths if p != primary])
        primary_ids = set(data.calculators(primary))
        rules = data.rules_of([primary] + [p for p in paths if p != primary])
    else:  # a custom category without pathways: its calculators, and any published rule among them
        primary, order, primary_ids = None, list(category.calculators), set(category.calculators)
        rules = [(k, r) for k, r in data.rules.items() if r.decider in order]
    order = [c for c in order if reg.find(c) is not None and _applies(c, cls) and not (base & population(reg.get(c))).empty]
    if not order:
        raise CompositionError(f"category {category.name!r} has no registry calculators for a {cls} patient")
    pos = {c: i for i, c in enumerate(order)}
    pop = base

    def fits(c: str, within: Population) -> bool:
        return not (within & population(reg.get(c))).empty

    # 1. the branch: a published rule whose decider and higher-value arm apply to this patient
    branch: Branch | None = None
    usable = [(k, r) for k, r in rules if r.decider in pos and any(a in pos for a in r.ge_arm)]
    mine = [x for x in usable if primary is None or x[1].decider in primary_ids]
    if usable and max_calcs >= 2:
        rid, rule = rng.choice(mine if mine and rng.random() < 0.85 else usable)
        pop = pop & population(reg.get(rule.decider))
        arms: dict[str, list[str]] = {"then": [], "else": []}
        for name, ids in (("then", rule.ge_arm), ("else", rule.lt_arm)):
            for a in ids:
                if a in pos and a not in arms["then"] and fits(a, pop):
                    arms[name].append(a)
                    pop = pop & population(reg.get(a))
        if arms["then"]:
            while 1 + max(len(arms["then"]), len(arms["else"])) > max_calcs:
                arms["else" if len(arms["else"]) >= len(arms["then"]) and arms["else"] else "then"].pop()
            if arms["then"]:
                branch = _rule_branch(rid, rule, reg.get(rule.decider), arms["then"], arms["else"])
    arm_ids = set(branch.then + branch.else_) if branch else set()
    arm_mean = (len(branch.then) + len(branch.else_)) / 2 if branch else 0.0
    arm_max = max(len(branch.then), len(branch.else_)) if branch else 0
    arm_min = min(len(branch.then), len(branch.else_)) if branch else 0

    # 2. the main sequence: drawn around the target, favouring the primary pathway, one patient throughout
    target = min(max_calcs, max(min_calcs, round(rng.gauss(mean_calcs, 1.3))))
    fixed = [branch.decider] if branch else []
    n_main = max(len(fixed), min(round(target - arm_mean), max_calcs - arm_max))
    main = list(fixed)
    cands = [c for c in order if c not in arm_ids and c not in main]
    while len(main) < n_main and cands:
        w = [(3.0 if c in primary_ids else 1.0) / _commonness(data, c) for c in cands]
        c = rng.choices(cands, weights=w)[0]
        cands.remove(c)
        if fits(c, pop):
            main.append(c)
            pop = pop & population(reg.get(c))
    if len(main) + arm_min < min_calcs:
        raise CompositionError(f"category {category.name!r}: only {len(main) + arm_min} calculators for one "
                               f"{cls} patient, need {min_calcs}")
    main.sort(key=pos.__getitem__)

    # 3. order: pathway order; feed sources of the arms before the branch; something after an empty arm
    if branch is None:
        steps = [Step(c, "pre") for c in main]
    else:
        k = main.index(branch.decider)
        pre, post = main[:k], main[k + 1:]
        moved = True
        while moved:  # a later step that feeds an arm (or a step already moved) goes before the branch
            moved = False
            for x in list(post):
                if any(feeds(reg.get(x), reg.get(y)) for y in [*arm_ids, *pre]):
                    post.remove(x)
                    pre.append(x)
                    moved = True
        if not post and not (branch.then and branch.else_):
            movable = [x for x in reversed(pre) if not any(feeds(reg.get(x), reg.get(y)) for y in
                                                           [branch.decider, *arm_ids, *pre])]
            if not movable:
                raise CompositionError(f"category {category.name!r}: nothing can follow the branch on {branch.decider}")
            pre.remove(movable[0])
            post.append(movable[0])
        steps = [Step(c, "pre") for c in pre] + [Step(branch.decider, "decider")]
        steps += [Step(c, "then") for c in branch.then] + [Step(c, "else") for c in branch.else_]
        steps += [Step(c, "post") for c in post]

    # 4. dependencies: results that feed a later calculator, the branch, inputs read by several
    deps: list[Dependency] = []
    ids = [s.calc_id for s in steps]
    arm_of = {c: "then" for c in (branch.then if branch else [])} | {c: "else" for c in (branch.else_ if branch else [])}
    fed: set[tuple[str, str]] = set()
    for j, y in enumerate(ids):
        for x in ids[:j]:
            if x in arm_of and arm_of.get(y) != arm_of[x]:
                continue  # an arm's result exists only on that arm
            for q in feeds(reg.get(x), reg.get(y)):
                if (y, q) not in fed:
                    fed.add((y, q))
                    deps.append(Dependency(x, y, "feeds", q))
    if branch:
        deps += [Dependency(branch.decider, c, "triggers") for c in branch.then + branch.else_]
    seen: dict[str, str] = {}
    for s in steps:
        for key in input_keys(reg.get(s.calc_id)):
            if key in seen and (s.calc_id, key) not in fed:
                deps.append(Dependency(seen[key], s.calc_id, "shares", key))
            else:
                seen.setdefault(key, s.calc_id)
    return Workflow(category, steps, deps, [branch] if branch else [], patient=cls,
                    pathways=list(paths), primary_pathway=primary)


def _commonness(data: Pathways, calc_id: str) -> float:
    """sqrt(number of pathways using the calculator): common ones (eGFR, MAP) are drawn a little less, so
    the calculators only one presentation uses (FeverPAIN) still appear in its tasks."""
    key = id(data)
    if key not in _COMMON:
        n: dict[str, int] = {}
        for pid in data.pathways:
            for c in data.calculators(pid):
                n[c] = n.get(c, 0) + 1
        _COMMON.clear()
        _COMMON[key] = {c: math.sqrt(k) for c, k in n.items()}
    return _COMMON[key].get(calc_id, 1.0)


_COMMON: dict[int, dict[str, float]] = {}


def _applies(calc_id: str, cls: str) -> bool:
    try:
        return applies(calc_id, cls)
    except KeyError:  # a calculator added without clinical metadata is not composed until it has some
        return False


def _rule_branch(rid: str, rule: Rule, decider: Calculator, then: list[str], else_: list[str]) -> Branch:
    """The ``>=``/``==`` branch of a published rule (a ``<`` rule swaps its arms), labelled from the bands."""
    if rule.op == "==":
        band = next((b.label for b in decider.bands if b.match is not None
                     and normalize_name(b.match) == normalize_name(str(rule.threshold))), str(rule.threshold))
        op, t, above, below = "==", str(rule.threshold), band, "any other result"
    else:
        t = float(rule.threshold)
        step = 1.0 if decider.output.type == "integer" else 10.0 ** -(decider.output.decimals or 2)
        op, above, below = ">=", decider.interpret(t) or "", decider.interpret(t - step) or ""
        if above == below:  # a threshold inside one band: say which side in numbers
            unit = f" {decider.output.unit}" if decider.output.unit else ""
            above, below = f"{t:g}{unit} or more", f"below {t:g}{unit}"
    return Branch(decider.id, op, t, list(then), list(else_), above, below, rule=rid, source=rule.source,
                  action=rule.action, worse_arm=rule.worse_arm)
