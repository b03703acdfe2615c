"""One patient per task: a profile of core attributes, the populations calculators apply to, and
every calculator input that expresses a profile attribute, derived from it.

Calculators name the same patient attribute in many ways: a numeric age in years or in months, an
age band ("80-85 years", "Adult (18-64 years)"), a yes/no criterion ("Age ≥ 75 years"), sex as
choice labels, weight and height (or recumbent length) in any unit, BMI as a number, a band
("BMI 19 to <21") or a criterion ("Obesity (BMI > 30)"), BSA, pregnancy. Drawing them independently
describes impossible patients (an infant growth chart and a geriatric screen for one person), so the
sampler draws a ``Profile`` once per patient and derives each such input from it deterministically.

Which inputs are attributes is read from registry metadata (key, label, unit, choice labels), so new
calculators are covered without code changes; ``populations.yaml`` beside this file holds the small
explicit mapping for the ambiguous cases and the tag -> population table. ``population(calc)`` is the
set of patients a calculator applies to (from its inputs' allowed ranges, its tags and that file);
the composer only combines calculators whose populations intersect, and the profile is drawn inside
the intersection. ``check_consistency`` checks a finished patient from its input values alone (no
profile needed), so it can judge any task, old or new.
"""

from __future__ import annotations

import math
import random
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import yaml

from calcmate.calculators.spec import Calculator, Input, normalize_name
from calcmate.units import UnitError, convert

DAYS_PER_YEAR = 365.25
DAYS_PER_MONTH = DAYS_PER_YEAR / 12
MAX_AGE_YEARS = 120.0
DEFAULT_POPULATIONS = Path(__file__).with_name("populations.yaml")

ATTRIBUTES: tuple[str, ...] = ("age", "age_band", "age_criterion", "sex", "weight", "usual_weight", "height", "bmi",
                               "bmi_band", "bmi_criterion", "bsa", "pregnancy", "head_circumference", "finding")


class ProfileError(ValueError):
    """A profile attribute cannot be expressed by an input (e.g. an age outside every age band)."""


# -- numeric bands parsed from labels ----------------------------------------------------------------
@dataclass(frozen=True)
class Range:
    """``lo <(=) x <(=) hi`` over a value in whole units (completed years, BMI to 0.1)."""

    lo: float = -math.inf
    hi: float = math.inf
    lo_incl: bool = True
    hi_incl: bool = True
    unit: str | None = None  # "year" / "month" for ages

    def contains(self, x: float) -> bool:
        return ((x >= self.lo) if self.lo_incl else (x > self.lo)) and ((x <= self.hi) if self.hi_incl else (x < self.hi))

    def exact_age_days(self) -> tuple[float, float]:
        """The exact ages (days, half-open) whose completed years/months fall in this band."""
        per = DAYS_PER_MONTH if self.unit == "month" else DAYS_PER_YEAR
        lo = 0.0 if self.lo == -math.inf else (self.lo if self.lo_incl else math.floor(self.lo) + 1)
        lo = math.ceil(lo)
        hi = math.inf if self.hi == math.inf else (math.floor(self.hi) + 1 if self.hi_incl else math.ceil(self.hi))
        return max(0.0, lo * per), hi * per


_OPS = r"(≥|>=|=>|>|≤|<=|=<|<)"
_NUM = r"(\d+(?:\.\d+)?)"
_UNIT = r"\s*(years?|yrs?|y|months?|mo|kg/m2|kg/m²)?"
_RANGE_RE = re.compile(_NUM + r"\s*(?:-|–|—|to)\s*" + r"(<|≤|<=)?\s*" + _NUM + _UNIT)
_ONE_SIDED_RE = re.compile(_OPS + r"\s*" + _NUM + _UNIT)
_WORDS_RE = re.compile(r"(over|above|older than|under|below|younger than)\s+" + _NUM + _UNIT + r"|" + _NUM + _UNIT
                       + r"\s*(or older|or over|and over|and older|\+|or more)")


def _unit_word(u: str | None, default: str | None) -> str | None:
    if not u:
        return default
    return "month" if u.startswith("mo") else "year" if u.startswith("y") else default


def parse_range(text: str, default_unit: str | None = "year") -> Range | None:
    """The numeric band a label states: "80-85 years", "<18", "Elderly (≥65 years)", "BMI 19 to <21"."""
    t = str(text).lower()
    m = _RANGE_RE.search(t)
    if m:
        lo, hi_op, hi, u = float(m.group(1)), m.group(2), float(m.group(3)), m.group(4)
        return Range(lo, hi, True, not hi_op or hi_op != "<", _unit_word(u, default_unit))
    m = _ONE_SIDED_RE.search(t)
    if m:
        op, n, u = m.group(1), float(m.group(2)), m.group(3)
        # a second bound: "≥ 65 and < 75"
        rest = t[m.end():]
        m2 = re.match(r"\s*(?:and|,|but)\s*" + _OPS + r"\s*" + _NUM, rest)
        r = _one_sided(op, n, _unit_word(u, default_unit))
        if m2:
            r2 = _one_sided(m2.group(1), float(m2.group(2)), r.unit)
            r = Range(max(r.lo, r2.lo), min(r.hi, r2.hi), r.lo_incl if r.lo >= r2.lo else r2.lo_incl,
                      r.hi_incl if r.hi <= r2.hi else r2.hi_incl, r.unit)
        return r
    m = _WORDS_RE.search(t)
    if m:
        if m.group(1):
            w, n, u = m.group(1), float(m.group(2)), m.group(3)
            return _one_sided(">" if w in ("over", "above", "older than") else "<", n, _unit_word(u, default_unit))
        return _one_sided(">=", float(m.group(4)), _unit_word(m.group(5), default_unit))
    return None


def _one_sided(op: str, n: float, unit: str | None) -> Range:
    if op in (">", ):
        return Range(n, math.inf, False, True, unit)
    if op in ("≥", ">=", "=>"):
        return Range(n, math.inf, True, True, unit)
    if op == "<":
        return Range(-math.inf, n, True, False, unit)
    return Range(-math.inf, n, True, True, unit)


# -- which inputs are attributes ---------------------------------------------------------------------
MALE = {"male", "m", "man", "men", "boy"}
FEMALE = {"female", "f", "woman", "women", "girl"}
_NOT_CURRENT = {"usual", "ideal", "target", "goal", "desired", "predicted", "lean", "adjusted", "dry", "birth",
                "loss", "gain", "change", "previous", "prior", "baseline", "dosing", "donor", "expected", "premorbid"}
_AGE_EXCLUDE = {"gestational", "gestation", "bone", "maternal", "paternal", "mother", "father", "onset", "diagnosis",
                "at", "since", "duration", "menarche", "donor"}
_AGE_CRITERION_RE = re.compile(r"^\s*(?:patient\s+)?(?:age|aged|elderly|older age|advanced age)\b")
_BMI_CRITERION_RE = re.compile(r"^\s*(?:obes\w*|overweight|underweight|morbid\w*\s+obes\w*|severe\s+obes\w*)?\s*\(?\s*"
                               r"(?:bmi|body mass index)\b")


@dataclass(frozen=True)
class Binding:
    """How one input expresses a profile attribute."""

    attr: str
    unit: str | None = None
    bands: tuple[tuple[str, Range], ...] = ()  # choice label -> band (age_band, bmi_band)
    criterion: Range | None = None  # age_criterion, bmi_criterion
    sexes: tuple[tuple[str, str], ...] = ()  # choice label -> "male"/"female"; bool: (("true", sex),)
    finding: str = ""  # attr "finding": which one, and each value's admissible states
    options: tuple[tuple[str, frozenset[str]], ...] = ()  # choice label (bool: "true"/"false") -> states


def _tokens(inp: Input) -> set[str]:
    return set(normalize_name(f"{inp.key.replace('_', ' ')} {inp.label}").split())


def _convertible(unit: str | None, target: str) -> bool:
    if not unit:
        return False
    try:
        convert(1.0, unit, target)
    except (UnitError, ValueError, TypeError):
        return False
    return True


def _sex_of(text: str) -> str | None:
    n = normalize_name(text)
    return "male" if n in MALE else "female" if n in FEMALE else None


def classify(inp: Input, forced: str | None = None) -> Binding | None:
    """The attribute ``inp`` expresses, read from its metadata (``forced``: the attribute named in data)."""
    toks = _tokens(inp)
    label_l = inp.label.lower()
    numeric = inp.type in ("number", "integer")

    def want(a: str) -> bool:
        return forced is None or forced == a

    if numeric:
        if want("age") and "age" in toks and not toks & _AGE_EXCLUDE and _convertible(inp.unit, "day"):
            return Binding("age", inp.unit)
        if want("head_circumference") and {"head", "circumference"} <= toks and _convertible(inp.unit, "cm"):
            return Binding("head_circumference", inp.unit)
        if want("bmi") and ({"bmi"} & toks or "body mass index" in normalize_name(inp.label)) \
                and not toks & _NOT_CURRENT and (inp.unit is None or _convertible(inp.unit, "kg/m**2")):
            return Binding("bmi", inp.unit)
        if want("bsa") and ({"bsa"} & toks or "body surface area" in normalize_name(inp.label)) \
                and not toks & _NOT_CURRENT and _convertible(inp.unit, "m**2"):
            return Binding("bsa", inp.unit)
        if _convertible(inp.unit, "kg") and "weight" in toks:
            if forced == "usual_weight" or (forced is None and toks & {"usual", "premorbid", "baseline", "previous"}):
                return Binding("usual_weight", inp.unit)
            if want("weight") and not toks & _NOT_CURRENT:
                return Binding("weight", inp.unit)
        if want("height") and toks & {"height", "length", "stature"} and not toks & (_NOT_CURRENT | {"head", "tube", "cycle"}) \
                and _convertible(inp.unit, "cm"):
            return Binding("height", inp.unit)
        return None
    if inp.type == "choice" and inp.choices:
        if want("sex"):
            sexes = []
            for c in inp.choices:
                s = next((x for x in (_sex_of(n) for n in (c.label, *c.aliases, str(c.value))) if x), None)
                sexes.append((c.label, s))
            if all(s for _, s in sexes) and {s for _, s in sexes} == {"male", "female"}:
                return Binding("sex", sexes=tuple(sexes))  # type: ignore[arg-type]
        if want("age_band") and ("age" in toks or forced == "age_band"):
            bands = [(c.label, parse_range(c.label)) for c in inp.choices]
            if all(r is not None for _, r in bands):
                return Binding("age_band", bands=tuple(bands))  # type: ignore[arg-type]
        if want("bmi_band") and ({"bmi"} & toks or "body mass index" in normalize_name(inp.label) or forced == "bmi_band"):
            bands = [(c.label, parse_range(re.sub(r"(?i)bmi|body mass index", "", c.label), None)) for c in inp.choices]
            if all(r is not None for _, r in bands):
                return Binding("bmi_band", bands=tuple(bands))  # type: ignore[arg-type]
        return None
    if inp.type == "bool":
        s = _sex_of(inp.label) or _sex_of(re.sub(r"(?i)\bsex\b", "", inp.label))
        if want("sex") and s:
            return Binding("sex", sexes=(("true", s),))
        if want("age_criterion") and (_AGE_CRITERION_RE.match(label_l) or forced == "age_criterion"):
            r = parse_range(label_l)
            if r is not None:
                return Binding("age_criterion", criterion=r)
        if want("bmi_criterion") and (_BMI_CRITERION_RE.match(label_l) or forced == "bmi_criterion"):
            r = parse_range(label_l.split("bmi", 1)[-1], None)
            if r is not None:
                return Binding("bmi_criterion", criterion=r)
        if want("pregnancy") and toks & {"pregnant", "pregnancy"}:
            return Binding("pregnancy")
    return None


# -- populations -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Population:
    """Patients a calculator applies to: exact age in days [lo_days, hi_days), sexes, pregnancy."""

    lo_days: float = 0.0
    hi_days: float = MAX_AGE_YEARS * DAYS_PER_YEAR
    sexes: frozenset[str] = frozenset({"male", "female"})
    pregnant: bool | None = None  # True: pregnant patients only; None: either

    def __and__(self, o: "Population") -> "Population":
        if self.pregnant is not None and o.pregnant is not None and self.pregnant != o.pregnant:
            return Population(1.0, 0.0, frozenset(), None)  # empty: pregnant and not pregnant
        return Population(max(self.lo_days, o.lo_days), min(self.hi_days, o.hi_days), self.sexes & o.sexes,
                          self.pregnant if self.pregnant is not None else o.pregnant)

    @property
    def empty(self) -> bool:
        return self.hi_days - self.lo_days < 1.0 or not self.sexes or (self.pregnant is True and "female" not in self.sexes)

    def contains_age(self, days: float) -> bool:
        return self.lo_days <= days < self.hi_days

    def describe(self) -> str:
        lo, hi = self.lo_days / DAYS_PER_YEAR, self.hi_days / DAYS_PER_YEAR
        age = f"{lo:.3g}-{hi:.3g} years" if lo >= 1 or hi > 3 else f"{self.lo_days / DAYS_PER_MONTH:.3g}-{self.hi_days / DAYS_PER_MONTH:.3g} months"
        bits = [age]
        if len(self.sexes) == 1:
            bits.append(next(iter(self.sexes)))
        if self.pregnant:
            bits.append("pregnant")
        return ", ".join(bits)


def _group(spec: Any, where: str) -> Population:
    if not isinstance(spec, dict) or "age" not in spec:
        raise ValueError(f"{where}: a group needs 'age: [from, to]' (years)")
    lo, hi = spec["age"]
    sex = spec.get("sex")
    if sex is not None and sex not in ("male", "female"):
        raise ValueError(f"{where}: sex must be male or female, got {sex!r}")
    return Population(float(lo) * DAYS_PER_YEAR, float(hi) * DAYS_PER_YEAR,
                      frozenset({sex}) if sex else frozenset({"male", "female"}), spec.get("pregnant"))


def _yn(k: Any) -> str:
    """YAML 1.1 reads the keys yes/no as booleans: back to their words."""
    return "yes" if k is True else "no" if k is False else str(k)


@dataclass(frozen=True)
class Member:
    """One input that expresses a finding: a yes/no (``yes``/``no`` states) or a choice (label prefix -> states)."""

    match: re.Pattern
    yes: frozenset[str] | None = None
    no: frozenset[str] | None = None
    choices: tuple[tuple[str, frozenset[str]], ...] = ()

    def states_of(self, label: str) -> frozenset[str] | None:
        """The states a choice label admits: its longest matching prefix ("*": any label)."""
        n = normalize_name(label)
        best = None
        for key, st in self.choices:
            k = normalize_name(key)
            if (key == "*" or n.startswith(k)) and (best is None or len(k) > best[0]):
                best = (len(k) if key != "*" else -1, st)
        return best[1] if best else None


@dataclass(frozen=True)
class Finding:
    """A clinical finding every calculator shares: its states, their prevalence, what each requires."""

    name: str
    states: dict[str, float]
    limits: dict[str, dict[str, tuple[float, float]]]
    members: tuple[Member, ...]

    @classmethod
    def parse(cls, name: str, d: Any) -> "Finding":
        if not isinstance(d, dict) or not d.get("states") or not d.get("members"):
            raise ValueError(f"{name}: needs 'states' and 'members'")
        states = {_yn(k): float(v) for k, v in d["states"].items()}
        allowed = set(states)

        def st(xs: Any, where: str) -> frozenset[str]:
            got = frozenset(_yn(x) for x in (xs or []))
            if got - allowed:
                raise ValueError(f"{name}.{where}: unknown states {sorted(got - allowed)} (states: {sorted(allowed)})")
            return got

        members = []
        for i, m in enumerate(d["members"]):
            m = {_yn(k): v for k, v in m.items()}
            if set(m) - {"match", "yes", "no", "choices"} or "match" not in m or ("yes" in m) == ("choices" in m):
                raise ValueError(f"{name}.members[{i}]: need 'match' and either 'yes' (with optional 'no') or 'choices'")
            if "yes" in m:
                yes = st(m["yes"], f"members[{i}].yes")
                no = st(m["no"], f"members[{i}].no") if "no" in m else frozenset(allowed - yes)
                members.append(Member(re.compile(m["match"]), yes, no))
            else:
                members.append(Member(re.compile(m["match"]), choices=tuple(
                    (str(k), st(v, f"members[{i}].choices.{k}")) for k, v in m["choices"].items())))
        limits = {}
        for s_, q in (d.get("limits") or {}).items():
            st([s_], "limits")
            limits[_yn(s_)] = {k: (float(v[0]), float(v[1])) for k, v in q.items()}
        return cls(name, states, limits, tuple(members))


@dataclass
class PatientModel:
    """The data of ``populations.yaml``: groups, tag and calculator populations, input overrides."""

    groups: dict[str, Population]
    default: str
    tags: dict[str, str]
    calculators: dict[str, str]
    inputs: dict[str, str | None]
    findings: dict[str, "Finding"] = field(default_factory=dict)
    _pop_cache: dict[str, Population] = field(default_factory=dict, repr=False)
    _bind_cache: dict[tuple[str, str], Binding | None] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "PatientModel":
        p = Path(path) if path else DEFAULT_POPULATIONS
        d = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        groups = {k: _group(v, f"{p}: groups.{k}") for k, v in (d.get("groups") or {}).items()}
        for sect in ("tags", "calculators"):
            for k, g in (d.get(sect) or {}).items():
                if g not in groups:
                    raise ValueError(f"{p}: {sect}.{k}: unknown group {g!r} (groups: {sorted(groups)})")
        default = d.get("default", "adult")
        if default not in groups:
            raise ValueError(f"{p}: default: unknown group {default!r}")
        inputs = dict(d.get("inputs") or {})
        for k, a in inputs.items():
            if "." not in k or (a is not None and a not in ATTRIBUTES):
                raise ValueError(f"{p}: inputs.{k}: need '<calculator>.<input key>: <attribute or null>', "
                                 f"attribute one of {ATTRIBUTES}")
        try:
            findings = {k: Finding.parse(k, v) for k, v in (d.get("findings") or {}).items()}
        except ValueError as e:
            raise ValueError(f"{p}: findings.{e}") from None
        return cls(groups, default, {normalize_name(k): v for k, v in (d.get("tags") or {}).items()},
                   dict(d.get("calculators") or {}), inputs, findings)

    def binding(self, calc: Calculator, inp: Input) -> Binding | None:
        key = (calc.id, inp.key)
        if key not in self._bind_cache:
            name = f"{calc.id}.{inp.key}"
            if name in self.inputs:
                forced = self.inputs[name]
                b = classify(inp, forced) if forced else None
                if forced and (b is None or b.attr != forced):
                    raise ValueError(f"populations inputs.{name}: {inp.label!r} cannot express {forced!r}")
            else:
                b = classify(inp) or self.finding_binding(inp.label, inp.type, [c.label for c in inp.choices])
            self._bind_cache[key] = b
        return self._bind_cache[key]

    def finding_binding(self, label: str, type_: str, choices: list[str] | None = None) -> Binding | None:
        """The finding an input of this label and type expresses (bool: yes/no; choice: by label prefix)."""
        n = normalize_name(label)
        for f in self.findings.values():
            for m in f.members:
                if not m.match.fullmatch(n):
                    continue
                if type_ == "bool" and m.yes is not None:
                    return Binding("finding", finding=f.name, options=(("true", m.yes), ("false", m.no)))
                if type_ == "choice" and m.choices:
                    opts = [(c, m.states_of(c)) for c in (choices or [])]
                    if choices and all(st is not None for _, st in opts):
                        return Binding("finding", finding=f.name, options=tuple(opts))  # type: ignore[arg-type]
        return None

    def draw_findings(self, rng: random.Random, age_days: float) -> tuple[tuple[str, str], ...]:
        """One state per finding: by prevalence for adults, the healthy (first) state for children."""
        out = []
        for f in self.findings.values():
            states = list(f.states)
            st = states[0] if age_days < 18 * DAYS_PER_YEAR else rng.choices(states, weights=[f.states[x] for x in states])[0]
            out.append((f.name, st))
        return tuple(out)

    def bindings(self, calc: Calculator) -> dict[str, Binding]:
        return {i.key: b for i in calc.inputs if (b := self.binding(calc, i)) is not None}

    def population(self, calc: Calculator) -> Population:
        """Where ``calc`` applies: its group (data, tags, default) within its age inputs' ranges."""
        if calc.id in self._pop_cache:
            return self._pop_cache[calc.id]
        ranges: list[tuple[float, float]] = []
        explicit_children = False
        for inp in calc.inputs:
            b = self.binding(calc, inp)
            if b is None:
                continue
            if b.attr == "age":
                lo, hi = _age_input_days(inp)
                ranges.append((lo, hi))
                explicit_children |= hi <= 18 * DAYS_PER_YEAR
            elif b.attr == "age_band":
                spans = [r.exact_age_days() for _, r in b.bands]
                lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
                ranges.append((lo, hi))
                explicit_children |= lo < 18 * DAYS_PER_YEAR
        if calc.id in self.calculators:
            pop = self.groups[self.calculators[calc.id]]
        else:
            tagged = [self.groups[self.tags[t]] for t in (normalize_name(x) for x in calc.tags) if t in self.tags]
            if tagged:
                pop = tagged[0]
                for g in tagged[1:]:  # a tag says "also applies to": the union (hull) of the tags' groups
                    pop = Population(min(pop.lo_days, g.lo_days), max(pop.hi_days, g.hi_days), pop.sexes | g.sexes,
                                     pop.pregnant if pop.pregnant == g.pregnant else None)
            else:
                pop = self.groups["any" if explicit_children and "any" in self.groups else self.default]
        for lo, hi in ranges:
            pop = pop & Population(lo, hi)
        self._pop_cache[calc.id] = pop
        return pop


def _age_input_days(inp: Input) -> tuple[float, float]:
    """Exact ages (days, half-open) an age input accepts; years are completed years."""
    unit = inp.unit or "year"
    lo = convert(inp.min, unit, "day") if inp.min is not None else 0.0
    if inp.max is None:
        return max(0.0, lo), MAX_AGE_YEARS * DAYS_PER_YEAR
    if _is_year(unit):
        return max(0.0, lo), convert(math.floor(inp.max) + 1, unit, "day")
    return max(0.0, lo), convert(inp.max, unit, "day")


def _is_year(unit: str) -> bool:
    return normalize_name(unit) in ("year", "years", "yr", "y", "a")


@lru_cache(maxsize=None)
def default_model() -> PatientModel:
    return PatientModel.load()


def population(calc: Calculator, model: PatientModel | None = None) -> Population:
    return (model or default_model()).population(calc)


def population_of(calcs: Iterable[Calculator], model: PatientModel | None = None) -> Population:
    pop = Population()
    for c in calcs:
        pop = pop & population(c, model)
    return pop


# -- the profile -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    """One patient's core attributes (values already rounded as a chart records them)."""

    age_days: int
    sex: str  # "male" | "female"
    weight_kg: float
    height_cm: float
    pregnant: bool = False
    usual_weight_kg: float | None = None
    head_circumference_cm: float | None = None
    findings: tuple[tuple[str, str], ...] = ()  # (finding, state): one state per finding for every calculator
    salt: int = 0  # picks among equally admissible labels, the same way for every calculator

    def finding(self, name: str) -> str | None:
        return dict(self.findings).get(name)

    def finding_limits(self, model: "PatientModel | None" = None) -> dict[str, tuple[float, float]]:
        """Measurement ranges the findings' states require (pool quantity -> (min, max)), intersected."""
        model = model or default_model()
        out: dict[str, tuple[float, float]] = {}
        for name, state in self.findings:
            f = model.findings.get(name)
            for q, (lo, hi) in (f.limits.get(state, {}) if f else {}).items():
                a, b = out.get(q, (-math.inf, math.inf))
                out[q] = (max(a, lo), min(b, hi))
        return out

    @property
    def age_years(self) -> float:
        return self.age_days / DAYS_PER_YEAR

    def completed(self, unit: str) -> int:
        per = DAYS_PER_MONTH if unit == "month" else DAYS_PER_YEAR
        return int(math.floor(self.age_days / per + 1e-9))

    @property
    def bmi(self) -> float:
        return self.weight_kg / (self.height_cm / 100) ** 2

    @property
    def bsa(self) -> float:
        """Mosteller."""
        return math.sqrt(self.height_cm * self.weight_kg / 3600)

    def as_dict(self) -> dict[str, Any]:
        d = {"age_days": self.age_days, "age_years": round(self.age_years, 2), "sex": self.sex,
             "weight_kg": self.weight_kg, "height_cm": self.height_cm, "bmi": round(self.bmi, 1),
             "pregnant": self.pregnant}
        if self.usual_weight_kg is not None:
            d["usual_weight_kg"] = self.usual_weight_kg
        if self.head_circumference_cm is not None:
            d["head_circumference_cm"] = self.head_circumference_cm
        return d


# Approximate CDC 2000 50th-percentile stature (cm) and BMI by age (years), for children past the
# infant LMS tables. Plausibility only: no ground truth depends on them.
_STATURE = {
    "male": {2: 87.0, 3: 95.5, 4: 102.5, 5: 109.0, 6: 115.5, 7: 122.0, 8: 128.0, 9: 133.5, 10: 138.5, 11: 143.5,
             12: 149.5, 13: 156.5, 14: 164.0, 15: 170.0, 16: 173.5, 17: 175.5, 18: 176.0, 20: 176.5},
    "female": {2: 86.0, 3: 94.5, 4: 101.5, 5: 108.0, 6: 115.0, 7: 121.0, 8: 127.5, 9: 133.0, 10: 138.5, 11: 144.5,
               12: 151.0, 13: 156.5, 14: 160.0, 15: 161.5, 16: 162.5, 17: 163.0, 18: 163.0, 20: 163.0},
}
_BMI = {2: 16.5, 4: 15.7, 6: 15.4, 8: 15.9, 10: 16.9, 12: 18.0, 14: 19.4, 16: 20.5, 18: 21.5, 20: 23.0}
_ADULT_HEIGHT = {"male": (176.0, 7.0), "female": (163.0, 6.5)}
INFANT_LMS_MONTHS = 36.0
ADULT_AGE_PRIOR = (18.0, 93.0)  # years: the hospital population the sampler drew before profiles


def _interp(table: dict[float, float], x: float) -> float:
    xs = sorted(table)
    if x <= xs[0]:
        return table[xs[0]]
    for a, b in zip(xs, xs[1:]):
        if x <= b:
            return table[a] + (x - a) / (b - a) * (table[b] - table[a])
    return table[xs[-1]]


def _lms_value(name: str, sex: str, at: float, z: float) -> float:
    from calcmate.calculators.growth import lms_at

    l, m, s = lms_at(name, sex, at)
    return m * math.exp(s * z) if abs(l) < 1e-12 else m * (1 + l * s * z) ** (1 / l)


def _z(rng: random.Random) -> float:
    return max(-3.3, min(3.3, rng.gauss(0.0, 1.15)))  # a little wider than the reference: reach the 3rd/97th bands


def sample_age_days(pop: Population, rng: random.Random, pediatric_share: float = 0.2) -> int:
    """An exact age in ``pop``: the adult hospital range when the population allows it (a child now and
    then when it also allows children), else uniform over the population's ages."""
    if pop.empty:
        raise ProfileError(f"empty population {pop}")
    lo, hi = pop.lo_days, pop.hi_days
    a_lo, a_hi = max(lo, ADULT_AGE_PRIOR[0] * DAYS_PER_YEAR), min(hi, ADULT_AGE_PRIOR[1] * DAYS_PER_YEAR)
    p_lo, p_hi = lo, min(hi, ADULT_AGE_PRIOR[0] * DAYS_PER_YEAR)
    adult_ok, child_ok = a_hi - a_lo >= 1, p_hi - p_lo >= 1
    if adult_ok and (not child_ok or rng.random() >= pediatric_share):
        lo, hi = a_lo, a_hi
    elif child_ok:
        lo, hi = p_lo, p_hi
    return int(math.floor(rng.uniform(lo, hi - 1e-6)))


def sample_profile(pop: Population, rng: random.Random) -> Profile:
    """Draw one patient inside ``pop``: age, sex, body size consistent with both, pregnancy."""
    age_days = sample_age_days(pop, rng)
    sex = rng.choice(sorted(pop.sexes))
    years = age_days / DAYS_PER_YEAR
    months = age_days / DAYS_PER_MONTH
    hc = None
    if months < INFANT_LMS_MONTHS:
        length = _lms_value("lenageinf", sex, months, _z(rng))
        weight = _lms_value("wtleninf", sex, min(max(length, 45.0), 103.5), _z(rng))
        hc = round(_lms_value("hcageinf", sex, months, _z(rng)), 1)
        height, weight = round(length, 1), round(weight, 2)
    else:
        if years < 20:
            med = _interp(_STATURE[sex], years)
            height = rng.gauss(med, 0.045 * med)
            bmi = _interp(_BMI, years) * math.exp(rng.gauss(0.0, 0.14))
        else:
            mu, sd = _ADULT_HEIGHT[sex]
            height = min(205.0, max(140.0, rng.gauss(mu, sd)))
            bmi = min(60.0, max(15.0, 26.5 * math.exp(rng.gauss(0.0, 0.21))))
        height = float(round(height))
        weight = round(bmi * (height / 100) ** 2, 1)
    fertile = sex == "female" and 15 <= years < 50
    pregnant = bool(pop.pregnant) or (pop.pregnant is None and fertile and rng.random() < 0.05)
    usual = round(weight * rng.uniform(0.97, 1.25), 2 if weight < 10 else 1)
    findings = default_model().draw_findings(rng, age_days)
    return Profile(age_days, sex, weight, height, pregnant, usual, hc, findings, rng.randrange(1 << 30))


# -- deriving input values ---------------------------------------------------------------------------
def _in_unit(x: float, canonical: str, unit: str | None) -> float:
    return x if not unit else convert(x, canonical, unit)


def _clamp(inp: Input, x: float) -> float:
    if inp.min is not None:
        x = max(x, inp.min)
    if inp.max is not None:
        x = min(x, inp.max)
    return x


def derive(b: Binding, inp: Input, p: Profile) -> Any:
    """The value ``inp`` takes for profile ``p`` (canonical: in the input's unit, a choice label, a bool)."""
    a = b.attr
    if a == "age":
        unit = inp.unit or "year"
        if _is_year(unit):
            return int(_clamp(inp, p.completed("year")))
        x = round(convert(p.age_days, "day", unit), 1)
        x = _clamp(inp, x)
        return int(round(x)) if inp.type == "integer" or normalize_name(unit) in ("day", "days", "d") else x
    if a == "age_band":
        for label, r in b.bands:
            if r.contains(p.completed(r.unit or "year")):
                return label
        raise ProfileError(f"input {inp.key!r}: age {p.age_years:.1f} y is in no band of {[x for x, _ in b.bands]}")
    if a == "age_criterion":
        return b.criterion.contains(p.completed(b.criterion.unit or "year"))  # type: ignore[union-attr]
    if a == "sex":
        if inp.type == "bool":
            return b.sexes[0][1] == p.sex
        return next(label for label, s in b.sexes if s == p.sex)
    if a in ("weight", "usual_weight"):
        kg = p.weight_kg if a == "weight" else (p.usual_weight_kg or p.weight_kg)
        x = _in_unit(kg, "kg", inp.unit)
        return round(x, 2 if x < 10 else 1)
    if a == "height":
        x = _in_unit(p.height_cm, "cm", inp.unit)
        return round(x, 1) if inp.unit and normalize_name(inp.unit) in ("cm", "centimeter") else round(x, 2)
    if a == "head_circumference":
        if p.head_circumference_cm is None:
            raise ProfileError("no head circumference beyond infancy")
        return round(_in_unit(p.head_circumference_cm, "cm", inp.unit), 1)
    if a == "bmi":
        return round(_in_unit(p.bmi, "kg/m**2", inp.unit), 1)
    if a == "bmi_band":
        bmi = round(p.bmi, 1)
        for label, r in b.bands:
            if r.contains(bmi):
                return label
        raise ProfileError(f"input {inp.key!r}: BMI {bmi} is in no band")
    if a == "bmi_criterion":
        return b.criterion.contains(round(p.bmi, 1))  # type: ignore[union-attr]
    if a == "bsa":
        return round(_in_unit(p.bsa, "m**2", inp.unit), 2)
    if a == "pregnancy":
        return p.pregnant
    if a == "finding":
        state = p.finding(b.finding)
        ok = [label for label, states in b.options if state in states]
        if not ok:
            raise ProfileError(f"input {inp.key!r}: no value expresses {b.finding} = {state}")
        pick = ok[zlib.crc32(f"{b.finding}:{inp.label}:{p.salt}".encode()) % len(ok)]
        return pick == "true" if inp.type == "bool" else pick
    raise ValueError(f"unknown attribute {a!r}")


# -- checking a finished patient ---------------------------------------------------------------------
def _num(v: Any) -> tuple[float, str | None] | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v), None
    if isinstance(v, (tuple, list)) and len(v) == 2 and isinstance(v[0], (int, float)):
        return float(v[0]), (str(v[1]) if v[1] else None)
    return None


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("yes", "true", "no", "false"):
        return v.strip().lower() in ("yes", "true")
    return None


def _decimals(x: float) -> int:
    s = repr(float(x))
    return 0 if float(x).is_integer() else len(s.split(".")[1]) if "." in s and "e" not in s else 6


def check_consistency(values: dict[str, dict[str, Any]], calcs: dict[str, Calculator],
                      model: PatientModel | None = None) -> list[str]:
    """Problems that make ``values`` (calc id -> {input key: value}) more than one patient.

    Ages: every numeric age (completed years; a fractional age in any unit to its last decimal), age
    band and age criterion must admit one common exact age; one sex; one weight, one height, and BMI
    and BSA inputs, bands and criteria that agree with them; pregnancy only in a woman of 12-55.
    """
    model = model or default_model()
    problems: list[str] = []
    age_sets: list[tuple[str, list[tuple[float, float]]]] = []
    sexes: dict[str, list[str]] = {}
    nums: dict[str, list[tuple[str, float]]] = {}
    bmi_rules: list[tuple[str, Range, bool]] = []
    preg: list[tuple[str, bool]] = []
    for cid, vals in values.items():
        calc = calcs[cid]
        for key, v in vals.items():
            inp = calc.input(key)
            b = model.binding(calc, inp)
            if b is None:
                continue
            where = f"{cid}.{key}={v!r}"
            a = b.attr
            if a == "age":
                n = _num(v)
                if n is None:
                    continue
                x, u = n
                unit = u or inp.unit or "year"
                if _is_year(unit) and float(x).is_integer():
                    lo, hi = convert(x, unit, "day"), convert(x + 1, unit, "day")
                else:
                    half = 0.5 * 10 ** -_decimals(x)
                    lo, hi = convert(x - half, unit, "day"), convert(x + half, unit, "day")
                age_sets.append((where, [(lo, hi)]))
            elif a == "age_band":
                r = dict(b.bands).get(v)
                if r is not None:
                    age_sets.append((where, [r.exact_age_days()]))
            elif a == "age_criterion":
                t = _bool(v)
                if t is not None:
                    lo, hi = b.criterion.exact_age_days()  # type: ignore[union-attr]
                    age_sets.append((where, [(lo, hi)] if t else [(0.0, lo), (hi, math.inf)]))
            elif a == "sex":
                if inp.type == "bool":
                    t = _bool(v)
                    s = b.sexes[0][1] if t else ({"male", "female"} - {b.sexes[0][1]}).pop()
                else:
                    s = dict(b.sexes).get(v) or _sex_of(str(v))
                if s:
                    sexes.setdefault(s, []).append(where)
            elif a in ("weight", "usual_weight", "height", "bmi", "bsa", "head_circumference"):
                n = _num(v)
                if n is None:
                    continue
                canon = {"weight": "kg", "usual_weight": "kg", "height": "cm", "bmi": "kg/m**2", "bsa": "m**2",
                         "head_circumference": "cm"}[a]
                unit = n[1] or inp.unit
                nums.setdefault(a, []).append((where, convert(n[0], unit, canon) if unit else n[0]))
            elif a in ("bmi_band", "bmi_criterion"):
                if a == "bmi_band":
                    r = dict(b.bands).get(v)
                    if r is not None:
                        bmi_rules.append((where, r, True))
                else:
                    t = _bool(v)
                    if t is not None:
                        bmi_rules.append((where, b.criterion, t))  # type: ignore[arg-type]
            elif a == "pregnancy":
                t = _bool(v)
                if t is not None:
                    preg.append((where, t))
    # one age
    common = [(0.0, math.inf)]
    for where, ivs in age_sets:
        nxt = [(max(a, c), min(b, d)) for a, b in common for c, d in ivs if min(b, d) - max(a, c) > 1e-6]
        if not nxt:
            problems.append(f"age: {where} contradicts {[w for w, _ in age_sets if w != where]}")
            break
        common = nxt
    # one sex
    if len(sexes) > 1:
        problems.append(f"sex: {sexes}")
    # one weight, one height (to rounding), and what follows from them
    tol = {"weight": 0.06, "usual_weight": 0.06, "height": 0.6, "bmi": 0.15, "bsa": 0.02, "head_circumference": 0.06}
    one: dict[str, float] = {}
    for a, xs in nums.items():
        ref = xs[0][1]
        bad = [w for w, x in xs if abs(x - ref) > tol[a]]
        if bad:
            problems.append(f"{a}: {xs[0][0]} vs {bad}")
        one[a] = ref
    bmi = one.get("bmi")
    if "weight" in one and "height" in one:
        calc_bmi = one["weight"] / (one["height"] / 100) ** 2
        if bmi is not None and abs(calc_bmi - bmi) > 0.25:
            problems.append(f"bmi: {bmi:.1f} given, weight/height give {calc_bmi:.1f}")
        bmi = calc_bmi if bmi is None else bmi
        if "bsa" in one and abs(math.sqrt(one["weight"] * one["height"] / 3600) - one["bsa"]) > 0.03:
            problems.append(f"bsa: {one['bsa']} given, weight/height give {math.sqrt(one['weight'] * one['height'] / 3600):.2f}")
    if bmi is not None:
        for where, r, t in bmi_rules:
            if r.contains(round(bmi, 1)) != t:
                problems.append(f"bmi: {where} disagrees with BMI {bmi:.1f}")
    # pregnancy
    if len({t for _, t in preg}) > 1:
        problems.append(f"pregnancy: {preg}")
    if any(t for _, t in preg):
        if "male" in sexes:
            problems.append(f"pregnancy: a pregnant male {preg} {sexes['male']}")
        if age_sets and all(hi <= 12 * DAYS_PER_YEAR or lo >= 56 * DAYS_PER_YEAR for lo, hi in common):
            problems.append("pregnancy: outside child-bearing age")
    return problems
