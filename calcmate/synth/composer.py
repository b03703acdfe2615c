"""Task composer: a scenario workflow of 4-10 registry calculators with a dependency and a branch.

Offline, the workflow is composed from registry metadata alone:

* **feeds** dependency: calculator X's ``produces`` names a quantity that is an input key of Y, so
  X's result is Y's input (e.g. corrected sodium -> free water deficit);
* **branch** (also a "triggers" dependency): after the *decider* calculator A, a condition on A's
  value (a band boundary of A) selects the ``then`` arm or the ``else`` arm (which may be empty);
* **shares** edges record inputs several calculators read (the same patient value).

Every calculator applies to a population (``calcmate.synth.profile.population``: an age range, sex,
pregnancy, from its inputs' allowed ranges, tags and ``populations.yaml``). The composer only adds a
calculator whose population intersects the workflow's so far, so one patient can be drawn for all of
them (never an infant growth chart beside a geriatric screen).

A ``Workflow`` is pure structure; the patient sampler fills in values and picks the branch taken.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Literal

from calcmate.calculators.registry import Registry
from calcmate.calculators.spec import Calculator, normalize_name
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
        return pop & population_of((reg.get(s.calc_id) for s in self.steps), model)

    def to_plan(self) -> dict[str, Any]:
        """JSON-able plan metadata (stored in ``Task.plan``)."""
        return {
            "category": self.category.name,
            "domain": self.category.domain.value,
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
                  d.get("then_label", ""), d.get("else_label", ""))


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
            else_skip_prob: float = 0.3) -> Workflow:
    """Compose one workflow for ``category``; raises CompositionError when the registry cannot."""
    if not 1 <= min_calcs <= max_calcs:
        raise ValueError(f"need 1 <= min_calcs ({min_calcs}) <= max_calcs ({max_calcs})")
    pool = [reg.get(i) for i in category.calculators]
    if not pool:
        raise CompositionError(f"category {category.name!r} has no registry calculators")
    cat_pop = default_model().groups[category.population] if category.population else Population()
    pool = [c for c in pool if not (cat_pop & population(c)).empty]
    if not pool:
        raise CompositionError(f"category {category.name!r}: no calculator applies to its population {cat_pop.describe()}")
    domain_pool = [c for c in reg.by_domain(category.domain) if c.id not in {p.id for p in pool}]
    everything = list(reg)
    target = rng.randint(min_calcs, max_calcs)
    used: list[str] = []
    deps: list[Dependency] = []
    # the patients every calculator used so far applies to, seeded by one calculator of the category so
    # that a category mixing populations (infant growth charts, geriatric screens) yields each of them
    pop = cat_pop & population(rng.choice(pool))

    def fits(c: Calculator) -> bool:
        return not (pop & population(c)).empty

    def use(c: Calculator) -> None:
        nonlocal pop
        pop = pop & population(c)
        used.append(c.id)

    # 1. a feeds pair, preferring both in the category, then one in it, then anywhere
    pair = _pick_feed_pair(pool, everything, rng, pop)
    if pair:
        x, y, q = pair
        use(x)
        use(y)
        deps.append(Dependency(x.id, y.id, "feeds", q))

    # 2. the decider: a pair member that can decide, else a category calculator, else any
    cand = [reg.get(i) for i in used if can_decide(reg.get(i))]
    decider = rng.choice(cand) if cand else None
    if decider is None:
        options = [c for c in pool if can_decide(c) and c.id not in used and fits(c)] or \
                  [c for c in domain_pool + everything if can_decide(c) and c.id not in used and fits(c)]
        if not options:
            raise CompositionError("no registry calculator has interpretation bands to branch on")
        decider = rng.choice(options)
        use(decider)

    # 3. the arms: calculators not yet used that fit the patient, preferring the category, then ones sharing inputs
    def fresh(cands: list[Calculator]) -> list[Calculator]:
        return [c for c in cands if c.id not in used and fits(c)]

    arm_pool = fresh(pool) or fresh(_related(decider, domain_pool)) or fresh(domain_pool) or fresh(everything)
    if not arm_pool:
        raise CompositionError("not enough calculators for a branch arm")
    then_c = rng.choice(arm_pool)
    use(then_c)
    else_ids: list[str] = []
    if rng.random() >= else_skip_prob:
        alt = fresh(pool) or fresh(_related(decider, domain_pool)) or fresh(domain_pool)
        if alt:
            else_c = rng.choice(alt)
            use(else_c)
            else_ids = [else_c.id]
    branch = _make_branch(decider, [then_c.id], else_ids, rng)
    deps.append(Dependency(decider.id, then_c.id, "triggers"))
    deps += [Dependency(decider.id, e, "triggers") for e in else_ids]

    # 4. fill to the target count of executed calculators (the shorter arm counts)
    def executed_min() -> int:
        return len(used) - max(len(branch.then), len(branch.else_))

    fillers: list[Calculator] = []
    for source in (pool, _related_many([reg.get(i) for i in used], domain_pool), domain_pool):
        cands = fresh(source)
        rng.shuffle(cands)
        for c in cands:
            if executed_min() >= target:
                break
            if not fits(c):  # an earlier filler narrowed the patient
                continue
            fillers.append(c)
            use(c)
    if executed_min() < min_calcs:
        raise CompositionError(
            f"category {category.name!r}: only {executed_min()} calculators available, need {min_calcs}")

    # 5. order: pre fillers, feed source, feed target, decider, arms, post fillers; feeds stay before targets
    # (``used`` already lists feed source, feed target and decider in a valid order)
    core = [i for i in used if i not in {f.id for f in fillers} and i not in branch.then and i not in branch.else_]
    # an empty else arm needs a calculator after the branch, or the decider could end the task (its
    # branch thought would then never be written)
    n_pre = rng.randint(0, len(fillers) - (1 if fillers and not branch.else_ else 0))
    steps = [Step(f.id, "pre") for f in fillers[:n_pre]]
    steps += [Step(i, "decider" if i == decider.id else "pre") for i in core]
    steps += [Step(i, "then") for i in branch.then] + [Step(i, "else") for i in branch.else_]
    steps += [Step(f.id, "post") for f in fillers[n_pre:]]

    # 6. shared inputs between executed calculators (same patient value)
    seen: dict[str, str] = {}
    for s in steps:
        for k in input_keys(reg.get(s.calc_id)):
            if k in seen and not any(d.kind == "feeds" and d.dst == s.calc_id and d.quantity == k for d in deps):
                deps.append(Dependency(seen[k], s.calc_id, "shares", k))
            else:
                seen.setdefault(k, s.calc_id)
    return Workflow(category, steps, deps, [branch])


def _pick_feed_pair(pool: list[Calculator], everything: list[Calculator], rng: random.Random,
                    pop: Population | None = None):
    pool_ids = {c.id for c in pool}
    pop = pop if pop is not None else Population()
    tiers: list[list[tuple[Calculator, Calculator, str]]] = [[], [], []]
    for x in everything:
        if not x.produces or (pop & population(x)).empty:
            continue
        for y in everything:
            if (pop & population(x) & population(y)).empty:
                continue
            for q in feeds(x, y):
                n_in = (x.id in pool_ids) + (y.id in pool_ids)
                tiers[2 - n_in].append((x, y, q))
    for tier in tiers[:2]:  # at least one member in the category
        if tier:
            return rng.choice(tier)
    return rng.choice(tiers[2]) if tiers[2] and rng.random() < 0.5 else None


def _related(c: Calculator, cands: list[Calculator]) -> list[Calculator]:
    keys = input_keys(c)
    return [x for x in cands if keys & input_keys(x)]


def _related_many(cs: list[Calculator], cands: list[Calculator]) -> list[Calculator]:
    keys = set().union(*(input_keys(c) for c in cs)) if cs else set()
    return [x for x in cands if keys & input_keys(x)]


def _make_branch(decider: Calculator, then: list[str], else_: list[str], rng: random.Random) -> Branch:
    if _numeric(decider):
        t, below, above = rng.choice(thresholds(decider))
        return Branch(decider.id, ">=", t, then, else_, above, below)
    labels = [b.match for b in decider.bands if b.match is not None]
    m = rng.choice(labels)
    band = next(b for b in decider.bands if b.match == m)
    return Branch(decider.id, "==", m, then, else_, band.label, "any other result")
