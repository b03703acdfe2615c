"""One patient's measurements: vitals, blood gas and common labs drawn once, and every calculator
input that expresses one of them derived from it.

Calculators read the same measurement in many forms: a number in any unit (platelets, creatinine in
mg/dL or µmol/L), a yes/no criterion over it ("Platelet count <30 × 10⁹/L", "Hb <13 g/dL men, <12
g/dL women", "Respiratory rate high for age (≥ 25 if age ≤ 50; ≥ 30 if age > 50)"), a derived
quantity (MAP, shock index, P/F, S/F, eGFR, creatinine clearance) or its parts (GCS eye/verbal/motor
beside a GCS total). Drawing them independently per calculator describes impossible patients (a
PLASMIC "platelets < 30" beside a SOFA platelet count of 250), so the sampler draws a ``Pool`` once
per patient attempt, correlated through one severity knob and simple physiology (pH from HCO3 and
PaCO2, PaO2 from P/F and FiO2, SpO2 from PaO2, chloride from the anion gap), and derives each such
input from it. A branch that needs another value re-draws the whole pool, never one input.

Which inputs are measurements is read from registry metadata (key, label, unit, choice values);
``measurements.yaml`` beside this file holds the quantity catalogue and the few explicit overrides.
``check_measurements`` judges finished input values alone (plus age/sex), for tests and audits.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import yaml

from calcmate.calculators.spec import Calculator, Input
from calcmate.synth.profile import Profile, ProfileError, Range
from calcmate.units import UnitError, convert, is_known_unit

DEFAULT_CATALOGUE = Path(__file__).with_name("measurements.yaml")
GCS_MAX = {"eye": 4, "verbal": 5, "motor": 6}


# -- the catalogue -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Quantity:
    name: str
    unit: str | None
    analyte: str | None
    decimals: int
    keys: tuple[str, ...]
    names: re.Pattern
    derived: bool = False

    def to_unit(self, x: float, unit: str | None) -> float:
        if not unit or not self.unit or _same(unit, self.unit):
            return x
        return convert(x, self.unit, unit, self.analyte)

    def from_unit(self, x: float, unit: str | None) -> float:
        if not unit or not self.unit or _same(unit, self.unit):
            return x
        return convert(x, unit, self.unit, self.analyte)

    def tolerance(self) -> float:
        """Half a charted digit, plus conversion rounding."""
        return 0.5 * 10 ** -self.decimals + 1e-6


def _same(a: str, b: str) -> bool:
    norm = lambda u: u.replace(" ", "").lower().replace("percent", "%")  # noqa: E731
    return norm(a) == norm(b)


def _convertible(unit: str | None, q: Quantity) -> bool:
    if not unit or not q.unit:
        return not unit or not q.unit
    try:
        q.from_unit(1.0, unit)
    except (UnitError, ValueError, TypeError):
        return False
    return True


@dataclass(frozen=True)
class Clause:
    """``quantity`` in ``range`` (canonical unit), for patients of ``sex`` / ``age`` (completed years) when given."""

    quantity: str
    range: Range
    sex: str | None = None
    age: Range | None = None


@dataclass(frozen=True)
class MBinding:
    """How an input expresses the pool: a number, a criterion (any clause true), a GCS component."""

    kind: str  # "number" | "criterion" | "gcs_component" | "choice_criterion"
    quantity: str = ""
    clauses: tuple[Clause, ...] = ()
    component: str = ""
    options: tuple[tuple[str, tuple[Clause, ...]], ...] = ()  # choice label -> its criterion


@dataclass
class Catalogue:
    """The data of ``measurements.yaml``: quantities, exclusion words, GCS components, overrides."""

    quantities: dict[str, Quantity]
    exclude: frozenset[str]
    gcs_components: dict[str, re.Pattern]
    inputs: dict[str, str | None]
    criteria: dict[str, str | dict[str, str]]
    _cache: dict[tuple[str, str], MBinding | None] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "Catalogue":
        p = Path(path) if path else DEFAULT_CATALOGUE
        d = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        qs: dict[str, Quantity] = {}
        for name, q in (d.get("quantities") or {}).items():
            if not isinstance(q, dict) or "decimals" not in q or "names" not in q:
                raise ValueError(f"{p}: quantities.{name}: needs 'decimals' and 'names'")
            unknown = set(q) - {"unit", "analyte", "decimals", "keys", "names", "derived"}
            if unknown:
                raise ValueError(f"{p}: quantities.{name}: unknown keys {sorted(unknown)}")
            qs[name] = Quantity(name, q.get("unit"), q.get("analyte"), int(q["decimals"]), tuple(q.get("keys") or ()),
                                re.compile(q["names"]), bool(q.get("derived", False)))
        missing = set(GENERATED) - set(qs)
        if missing:
            raise ValueError(f"{p}: quantities lack {sorted(missing)} (the pool draws them)")
        inputs = dict(d.get("inputs") or {})
        for k, v in inputs.items():
            if "." not in k or (v is not None and v not in qs):
                raise ValueError(f"{p}: inputs.{k}: need '<calculator>.<input key>: <quantity or null>', got {v!r}")
        criteria = dict(d.get("criteria") or {})
        for k in criteria:
            if "." not in k or not isinstance(criteria[k], (str, dict)):
                raise ValueError(f"{p}: criteria.{k}: need '<calculator>.<input key>: <criterion text>' "
                                 "or '{<choice label>: <criterion text>, ...}'")
        gcs = {k: re.compile(v) for k, v in (d.get("gcs_components") or {}).items()}
        if set(gcs) - set(GCS_MAX):
            raise ValueError(f"{p}: gcs_components: only {sorted(GCS_MAX)}")
        return cls(qs, frozenset(d.get("exclude_words") or ()), gcs, inputs, criteria)

    # -- which inputs are measurements -----------------------------------------------------------
    def binding(self, calc: Calculator, inp: Input) -> MBinding | None:
        key = (calc.id, inp.key)
        if key not in self._cache:
            name = f"{calc.id}.{inp.key}"
            if name in self.inputs and self.inputs[name] is None:
                b = None
            elif name in self.inputs:
                q = self.quantities[self.inputs[name]]  # type: ignore[index]
                if inp.type not in ("number", "integer") or not _convertible(inp.unit, q):
                    raise ValueError(f"measurements inputs.{name}: {inp.label!r} cannot express {q.name!r}")
                b = MBinding("number", q.name)
            else:
                b = self.classify(inp, self.criteria.get(name))
            self._cache[key] = b
        return self._cache[key]

    def classify(self, inp: Input, criterion_text: str | dict[str, str] | None = None) -> MBinding | None:
        if isinstance(criterion_text, dict):
            labels = {c.label for c in inp.choices}
            if inp.type != "choice" or set(criterion_text) - labels:
                raise ValueError(f"measurements criteria for {inp.key!r}: choice labels {sorted(criterion_text)} "
                                 f"not among {sorted(labels)}")
            opts = tuple((lab, tuple(parse_criterion(t, self))) for lab, t in criterion_text.items())
            if not all(cl for _, cl in opts):
                raise ValueError(f"measurements criteria for {inp.key!r}: a choice's criterion names no measurement")
            return MBinding("choice_criterion", options=opts)
        text = normalize_text(inp.label)
        words = set(re.findall(r"[a-z]+", text)) | set(inp.key.lower().split("_"))
        if inp.type in ("number", "integer"):
            for q in self.quantities.values():
                if inp.key in q.keys and _convertible(inp.unit, q):
                    return MBinding("number", q.name)
            if words & self.exclude:
                return None
            for q in self.quantities.values():
                if q.names.search(text) and _convertible(inp.unit, q) and (inp.unit or not q.unit):
                    return MBinding("number", q.name)
            return None
        if inp.type == "choice" and inp.choices:
            for comp, rx in self.gcs_components.items():
                vals = sorted(c.value for c in inp.choices if isinstance(c.value, int) and not isinstance(c.value, bool))
                if rx.search(text) and vals and vals == list(range(1, GCS_MAX[comp] + 1)):
                    return MBinding("gcs_component", "gcs", component=comp)
            return None
        if inp.type == "bool":
            if criterion_text is None and words & self.exclude:
                return None
            clauses = parse_criterion(criterion_text or inp.label, self)
            return MBinding("criterion", clauses=tuple(clauses)) if clauses else None
        return None

    def bindings(self, calc: Calculator) -> dict[str, MBinding]:
        return {i.key: b for i in calc.inputs if (b := self.binding(calc, i)) is not None}


@lru_cache(maxsize=None)
def default_catalogue() -> Catalogue:
    return Catalogue.load()


# -- criteria parsed from labels ---------------------------------------------------------------------
_OP = r"(≥|>=|=>|>|≤|<=|=<|<)"
_NUM = r"(\d+(?:\.\d+)?)"
_UNIT_TOKEN = r"(%|°\s?[cf]\b|[a-z/µμ^0-9.]*[a-z/%µμ][a-z/^0-9.µμ]*)?"
_CLAUSE_RE = re.compile(_OP + r"\s*" + _NUM + r"\s*" + _UNIT_TOKEN)
_RANGE_CLAUSE_RE = re.compile(_NUM + r"\s*(?:-|–|to)\s*" + _NUM + r"\s*" + _UNIT_TOKEN)
_AGE_RE = re.compile(r"(?:if\s+)?age\s*" + _OP + r"\s*" + _NUM + r"(?:\s*(?:years?|y))?")
_SPLIT_RE = re.compile(r",\s|\s+or\s+|:")
_MALE_RE = re.compile(r"\b(men|male|males|man)\b")
_FEMALE_RE = re.compile(r"\b(women|female|females|woman)\b")


def normalize_text(s: str) -> str:
    """Lower case, plain digits and operators: "PaO₂ < 70", "<30 × 10⁹/L" -> "pao2 < 70", "<30 10^9/l"."""
    t = s.lower()
    for a, b in (("₂", "2"), ("₃", "3"), ("⁹", "^9"), ("³", "^3"), ("²", "^2"), ("⁻", "-"), ("×", "x"), ("μ", "µ")):
        t = t.replace(a, b)
    t = re.sub(r"(\d),(\d{3})\b", r"\1\2", t)
    return re.sub(r"\s*x\s*10\^9\s*/\s*l\b", " 10^9/l", t)


def _one_sided(op: str, n: float) -> Range:
    if op == ">":
        return Range(n, math.inf, False, True)
    if op in ("≥", ">=", "=>"):
        return Range(n, math.inf, True, True)
    if op == "<":
        return Range(-math.inf, n, True, False)
    return Range(-math.inf, n, True, True)


def _mention(text: str, end: int, cat: Catalogue) -> tuple[int, str] | None:
    """The quantity named last before ``end`` (longest name at the latest position)."""
    best: tuple[int, int, str] | None = None
    for q in cat.quantities.values():
        for m in q.names.finditer(text, 0, end):
            cand = (m.end(), m.end() - m.start(), q.name)
            if best is None or cand > best:
                best = cand
    return (best[0], best[2]) if best else None


def _canonical_range(r: Range, unit: str | None, q: Quantity) -> Range | None:
    """``r`` (in ``unit``) in the quantity's canonical unit; None when the unit is another quantity's."""
    unit = (unit or "").strip().rstrip(".")
    if not unit or not q.unit:
        return r
    try:
        f = lambda x: x if math.isinf(x) else q.from_unit(x, unit)  # noqa: E731
        return Range(f(r.lo), f(r.hi), r.lo_incl, r.hi_incl)
    except (UnitError, ValueError, TypeError):
        return None if is_known_unit(unit) else r  # "bpm", "mL/min/1.73": a spelling, not another dimension


def parse_criterion(label: str, cat: Catalogue) -> list[Clause]:
    """The clauses of a yes/no criterion over measurements (empty: not one): segments split by ";" may
    carry an age condition, clauses split by "," / "or" may carry a sex; a clause without its own
    quantity name continues the last one named ("Temperature > 38 °C or < 36 °C")."""
    text = normalize_text(label)
    clauses: list[Clause] = []
    current: str | None = None
    offset = 0
    for seg in text.split(";"):
        seg_start = offset
        offset += len(seg) + 1
        age = None
        m = _AGE_RE.search(seg)
        if m:
            age = _one_sided(m.group(1), float(m.group(2)))
            seg = seg[:m.start()] + " " * (m.end() - m.start()) + seg[m.end():]
        pos = 0
        for part in _SPLIT_RE.split(seg):
            start = seg.index(part, pos) if part else pos
            pos = start + len(part)
            cm = _CLAUSE_RE.search(part)
            rng_ = None
            if cm:
                rng_, unit, at = _one_sided(cm.group(1), float(cm.group(2))), cm.group(3), cm.start()
            else:
                rm = _RANGE_CLAUSE_RE.search(part)
                if rm and float(rm.group(1)) < float(rm.group(2)):
                    rng_, unit, at = Range(float(rm.group(1)), float(rm.group(2))), rm.group(3), rm.start()
            mention = _mention(text, seg_start + start + (at if rng_ is not None else len(part)), cat)
            if mention is not None and mention[0] > seg_start + start - 1:
                current = mention[1]  # named inside this clause
            elif mention is not None and current is None:
                current = mention[1]
            if rng_ is None or current is None:
                continue
            q = cat.quantities[current]
            r = _canonical_range(rng_, unit, q)
            if r is None:
                continue  # "> 10% bands": a measurement the pool does not hold
            sex = "male" if _MALE_RE.search(part) else "female" if _FEMALE_RE.search(part) else None
            clauses.append(Clause(current, r, sex, age))
    return clauses


def clause_holds(c: Clause, value: float, sex: str | None, age_years: int | None) -> bool | None:
    """Whether clause ``c`` is met (None: it does not apply to this patient's sex or age)."""
    if c.sex is not None and sex is not None and c.sex != sex:
        return None
    if c.age is not None and (age_years is None or not c.age.contains(age_years)):
        return None  # an age-conditioned clause for a patient of unknown or another age
    return c.range.contains(value)


# -- the pool ----------------------------------------------------------------------------------------
GENERATED = ("sbp", "dbp", "map", "heart_rate", "resp_rate", "temperature", "spo2", "fio2", "pao2", "paco2", "ph",
             "bicarbonate", "pf_ratio", "sf_ratio", "shock_index", "gcs", "hemoglobin", "hematocrit", "platelets",
             "wbc", "mcv", "creatinine", "bun", "sodium", "potassium", "chloride", "glucose", "calcium", "albumin",
             "bilirubin", "inr", "lactate", "ast", "alt", "egfr", "crcl", "osmolality", "ethanol", "urine_sodium",
             "urine_potassium", "urine_chloride", "urine_creatinine", "urine_urea", "urine_output", "fluid_intake", "icp",
             "norepinephrine", "epinephrine", "dopamine", "tidal_volume")


@dataclass(frozen=True)
class Pool:
    """One patient's measurements (canonical units, charted precision) and the severity they came from."""

    values: dict[str, float]
    gcs_parts: dict[str, int]
    severity: float

    def __getitem__(self, q: str) -> float:
        return self.values[q]

    def as_dict(self) -> dict[str, Any]:
        return {"severity": round(self.severity, 3), **self.values, **{f"gcs_{k}": v for k, v in self.gcs_parts.items()}}


def _clip(x: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, x))


def _spo2_from_pao2(pao2: float) -> float:
    """Severinghaus' oxygen dissociation curve."""
    return 100.0 / (23400.0 / (pao2 ** 3 + 150.0 * pao2) + 1.0)


def egfr_ckd_epi_2021(creatinine: float, age_years: float, sex: str) -> float:
    k, a = (0.7, -0.241) if sex == "female" else (0.9, -0.302)
    r = creatinine / k
    return 142 * min(r, 1) ** a * max(r, 1) ** -1.2 * 0.9938 ** age_years * (1.012 if sex == "female" else 1.0)


def crcl_cockcroft_gault(creatinine: float, age_years: float, sex: str, weight_kg: float) -> float:
    return (140 - age_years) * weight_kg / (72 * creatinine) * (0.85 if sex == "female" else 1.0)


def derived_values(v: dict[str, float], age_years: float | None = None, sex: str | None = None,
                   weight_kg: float | None = None) -> dict[str, float]:
    """The derived quantities computable from ``v`` (canonical units), rounded as charted."""
    out: dict[str, float] = {}
    if "sbp" in v and "dbp" in v:
        out["map"] = round((v["sbp"] + 2 * v["dbp"]) / 3)
    if "heart_rate" in v and "sbp" in v:
        out["shock_index"] = round(v["heart_rate"] / v["sbp"], 2)
    if "pao2" in v and "fio2" in v:
        out["pf_ratio"] = round(v["pao2"] / (v["fio2"] / 100))
    if "spo2" in v and "fio2" in v:
        out["sf_ratio"] = round(v["spo2"] / (v["fio2"] / 100))
    if "creatinine" in v and age_years is not None and sex:
        out["egfr"] = round(egfr_ckd_epi_2021(v["creatinine"], age_years, sex))
        if weight_kg is not None:
            out["crcl"] = round(crcl_cockcroft_gault(v["creatinine"], age_years, sex, weight_kg))
    return out


def _gcs_parts(total: int, rng: random.Random) -> dict[str, int]:
    combos = [(e, v, m) for e, v, m in itertools.product(range(1, 5), range(1, 6), range(1, 7)) if e + v + m == total]
    e, v, m = rng.choice(combos)
    return {"eye": e, "verbal": v, "motor": m}


def sample_pool(profile: Profile, rng: random.Random, severity: float | None = None) -> Pool:
    """Draw one patient's measurements. ``severity`` (0 well .. 1 critically ill) moves vitals and labs
    together, so a septic patient is hypotensive, tachycardic, acidotic and thrombocytopenic at once."""
    s = rng.betavariate(1.1, 1.9) if severity is None else float(severity)
    g = rng.gauss
    years = profile.age_years
    child = max(0.0, 12.0 - years)  # children: faster heart and breathing, lower pressure
    male = profile.sex == "male"
    v: dict[str, float] = {}
    shock = s * rng.uniform(0.2, 1.1)
    v["heart_rate"] = round(_clip(75 + 4.5 * child + 60 * s * rng.uniform(0.5, 1.1) + g(0, 9), 40, 200))
    sbp = _clip(min(125, 95 + 2.5 * years) + g(0, 14) - 55 * shock + (15 * rng.random() if s < 0.3 else 0), 60, 220)
    v["sbp"] = round(sbp)
    v["dbp"] = round(_clip(0.6 * sbp + g(0, 7), 30, sbp - 15))
    v["resp_rate"] = round(_clip(15 + 1.8 * child + 18 * s * rng.uniform(0.4, 1.1) + g(0, 2.5), 8, 50))
    fever = s * 2.6 * (rng.random() if rng.random() < 0.8 else -0.7 * rng.random())
    v["temperature"] = round(_clip(36.9 + g(0, 0.35) + fever, 34.0, 41.5), 1)
    pf = _clip(460 - 380 * s * rng.uniform(0.3, 1.1) + g(0, 35), 50, 560)
    fio2 = 21 if pf > 280 and rng.random() < 0.8 else rng.choice((24, 28, 30, 35, 40, 50, 60, 70, 80, 100))
    f_lo, f_hi = profile.finding_limits().get("fio2", (0, 100))
    if not f_lo <= fio2 <= f_hi:  # ventilated or on CPAP: supplemental oxygen
        fio2 = rng.choice([x for x in (30, 35, 40, 50, 60, 70, 80, 100) if f_lo <= x <= f_hi])
    v["fio2"] = fio2
    v["pao2"] = round(_clip(pf * fio2 / 100, 38, 600))
    v["spo2"] = round(_clip(_spo2_from_pao2(v["pao2"]) + g(0, 0.8), 60, 100))
    hco3 = _clip(24 + g(0, 2) - 14 * s * rng.random() + (6 * rng.random() if rng.random() < 0.1 else 0), 5, 42)
    v["bicarbonate"] = round(hco3)
    if v["bicarbonate"] < 22:
        paco2 = 1.5 * v["bicarbonate"] + 8 + g(0, 2.5)  # Winters' compensation
    else:
        paco2 = 40 + g(0, 4) + (18 * rng.random() if rng.random() < 0.15 * (1 + s) else 0)
    v["paco2"] = round(_clip(paco2, 15, 95))
    v["ph"] = round(_clip(6.1 + math.log10(v["bicarbonate"] / (0.0307 * v["paco2"])), 6.8, 7.75), 2)
    v["sodium"] = round(_clip(140 + g(0, 2.5) + s * rng.choice((-1, 1)) * rng.uniform(0, 20), 112, 172))
    gap = _clip(10 + g(0, 2) + 0.8 * (24 - v["bicarbonate"]), 4, 35)
    v["chloride"] = round(_clip(v["sodium"] - v["bicarbonate"] - gap, 75, 130))
    v["potassium"] = round(_clip(4.2 + g(0, 0.35) + s * rng.uniform(-1.0, 2.2), 2.4, 7.5), 1)
    size = min(1.0, profile.height_cm / 170)
    v["creatinine"] = round(_clip((0.95 if male else 0.75) * size * math.exp(g(0, 0.18) + s * rng.uniform(0, 1.9)),
                                  0.2, 12), 2)
    lim = profile.finding_limits()
    if "creatinine" in lim and not lim["creatinine"][0] <= v["creatinine"] <= lim["creatinine"][1]:
        lo, hi = lim["creatinine"]  # the kidney state the findings fixed (CKD, AKI, dialysis, normal)
        v["creatinine"] = round(rng.uniform(max(lo, 0.75 * hi), hi) if v["creatinine"] > hi
                                else rng.uniform(lo, min(hi, lo * (1.3 + 1.5 * s))), 2)
    v["bun"] = round(_clip(v["creatinine"] * rng.uniform(10, 24), 3, 160))
    v["glucose"] = round(_clip(95 + abs(g(0, 20)) + (s * rng.uniform(0, 300) if rng.random() < 0.6 else 0), 45, 900))
    v["calcium"] = round(_clip(9.4 + g(0, 0.4) - s * rng.uniform(0, 1.8), 6.0, 12.5), 1)
    v["albumin"] = round(_clip(4.2 + g(0, 0.3) - s * rng.uniform(0, 2.0), 1.5, 5.3), 1)
    v["bilirubin"] = round(_clip(0.7 * math.exp(g(0, 0.35) + s * rng.uniform(0, 2.6)), 0.2, 30), 1)
    v["inr"] = round(_clip(1.0 + abs(g(0, 0.07)) + s * rng.uniform(0, 1.9), 0.8, 7), 1)
    v["platelets"] = round(_clip(250 * math.exp(g(0, 0.25) - s * rng.uniform(0, 2.4)), 5, 750))
    hb = _clip((14.8 if male else 13.3) - (1.5 if years < 12 else 0) + g(0, 1.1) - s * rng.uniform(0, 5.5), 4.5, 19.5)
    v["hemoglobin"] = round(hb, 1)
    v["hematocrit"] = round(_clip(3 * v["hemoglobin"] + g(0, 1.2), 14, 60))
    v["wbc"] = round(_clip(7.5 * math.exp(g(0, 0.28) + s * rng.uniform(-1.3, 1.4)), 0.3, 45), 1)
    v["mcv"] = round(_clip(90 + g(0, 5.5), 62, 125))
    v["lactate"] = round(_clip(1.0 + abs(g(0, 0.35)) + s * s * rng.uniform(0, 9), 0.4, 18), 1)
    v["ast"] = round(_clip(24 * math.exp(g(0, 0.3) + s * rng.uniform(0, 2.8)), 8, 5000))
    v["alt"] = round(_clip(22 * math.exp(g(0, 0.35) + s * rng.uniform(0, 2.8)), 6, 5000))
    total = 15 if rng.random() >= 0.75 * s else rng.choice(range(3, 15)) if s > 0.6 else rng.choice(range(9, 15))
    v["gcs"] = max(total, _gcs_floor(profile))
    _draw_more(v, profile, s, rng)
    v.update(derived_values(v, profile.completed("year"), profile.sex, profile.weight_kg))  # as calculators read age
    return Pool(v, _gcs_parts(int(v["gcs"]), rng), s)


def _gcs_floor(profile: Profile) -> int:
    """The lowest GCS the patient's functional state allows (walking up stairs unaided is not coma)."""
    return int(profile.finding_limits().get("gcs", (3, 15))[0])


def _draw_more(v: dict[str, float], profile: Profile, s: float, rng: random.Random) -> None:
    """Urine chemistry, osmolality, fluid balance, ICP, vasopressors, tidal volume: plausible for this patient."""
    g = rng.gauss
    size = min(1.0, profile.weight_kg / 70)
    v["ethanol"] = 0.0 if rng.random() > 0.15 else float(round(rng.uniform(20, 400)))
    gap = abs(g(0, 4)) + (rng.uniform(10, 40) if rng.random() < 0.08 else 0)
    v["osmolality"] = round(_clip(2 * v["sodium"] + v["bun"] / 2.8 + v["glucose"] / 18 + v["ethanol"] / 3.7 + gap, 220, 420))
    v["urine_sodium"] = round(_clip(g(60, 35), 5, 220))
    v["urine_potassium"] = round(_clip(g(40, 18), 5, 150))
    v["urine_chloride"] = round(_clip(g(80, 40), 5, 250))
    v["urine_creatinine"] = round(_clip(g(100, 45), 15, 350))
    v["urine_urea"] = round(_clip(g(600, 250), 80, 2000))
    oliguric = v["creatinine"] > 3 and rng.random() < 0.5
    uo = rng.uniform(80, 450) if oliguric else _clip(g(1500, 450) * (1 - 0.5 * s), 300, 4000)
    v["urine_output"] = round(uo * size)
    v["fluid_intake"] = round((uo + rng.uniform(200, 1500)) * size)
    v["icp"] = round(_clip(10 + s * rng.uniform(0, 28) + g(0, 3), 2, 60))
    on_pressors = (v["sbp"] + 2 * v["dbp"]) / 3 < 70 and s > 0.3 and rng.random() < 0.8
    v["norepinephrine"] = round(rng.uniform(0.05, 0.6), 2) if on_pressors else 0.0
    v["epinephrine"] = round(rng.uniform(0.02, 0.2), 2) if on_pressors and rng.random() < 0.3 else 0.0
    v["dopamine"] = round(rng.uniform(3, 15), 1) if on_pressors and rng.random() < 0.2 else 0.0
    ibw = (50.0 if profile.sex == "male" else 45.5) + 0.91 * (profile.height_cm - 152.4)
    ibw = profile.weight_kg if profile.age_years < 12 or ibw < 10 else ibw
    v["tidal_volume"] = round(_clip(rng.uniform(6, 8) * ibw, 20, 900))


# -- deriving input values ---------------------------------------------------------------------------
def criterion_truth(clauses: Iterable[Clause], pool_values: dict[str, float], sex: str | None,
                    age_years: int | None) -> bool:
    return any(clause_holds(c, pool_values[c.quantity], sex, age_years) for c in clauses)


def derive_measure(b: MBinding, inp: Input, pool: Pool, profile: Profile, cat: Catalogue | None = None) -> Any:
    """The value ``inp`` takes for ``pool`` (in the input's unit, a choice label, a bool)."""
    cat = cat or default_catalogue()
    if b.kind == "criterion":
        return criterion_truth(b.clauses, pool.values, profile.sex, profile.completed("year"))
    if b.kind == "choice_criterion":
        for label, clauses in b.options:
            if criterion_truth(clauses, pool.values, profile.sex, profile.completed("year")):
                return label
        raise ProfileError(f"input {inp.key!r}: no choice's criterion holds")
    if b.kind == "gcs_component":
        want = pool.gcs_parts[b.component]
        return next(c.label for c in inp.choices if c.value == want)
    q = cat.quantities[b.quantity]
    x = q.to_unit(pool[b.quantity], inp.unit)
    if inp.type == "integer":
        x = int(round(x))
    else:
        x = round(x, q.decimals) if not inp.unit or not q.unit or _same(inp.unit, q.unit) else float(f"{x:.4g}")
    if (inp.min is not None and x < inp.min) or (inp.max is not None and x > inp.max):
        raise ProfileError(f"input {inp.key!r}: {b.quantity} {x:g} outside {inp.min}-{inp.max}")
    return x


# -- checking a finished patient ---------------------------------------------------------------------
def _number(v: Any) -> tuple[float, str | None] | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v), None
    if isinstance(v, (tuple, list)) and len(v) == 2 and isinstance(v[0], (int, float)):
        return float(v[0]), (str(v[1]) if v[1] else None)
    return None


def check_measurements(values: dict[str, dict[str, Any]], calcs: dict[str, Calculator], sex: str | None = None,
                       age_years: int | None = None, weight_kg: float | None = None,
                       skip: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
                       cat: Catalogue | None = None) -> list[str]:
    """Problems that make ``values`` (calc id -> {input key: value}) more than one set of measurements:
    one value per quantity in any unit, derived quantities (MAP, shock index, P/F, S/F, eGFR, CrCl) that
    follow from their parts, GCS components that add up to the total, criteria true exactly when their
    quantity says so. ``skip``: (calc id, key) pairs that hold another calculator's result."""
    cat = cat or default_catalogue()
    problems: list[str] = []
    seen: dict[str, list[tuple[str, float]]] = {}
    crits: list[tuple[str, MBinding, bool]] = []
    gcs_parts: dict[str, list[tuple[str, int]]] = {}
    for cid, vals in values.items():
        calc = calcs[cid]
        for key, v in vals.items():
            if (cid, key) in skip:
                continue
            b = cat.binding(calc, calc.input(key))
            if b is None:
                continue
            where = f"{cid}.{key}={v!r}"
            if b.kind == "number":
                n = _number(v)
                if n is not None:
                    q = cat.quantities[b.quantity]
                    seen.setdefault(b.quantity, []).append((where, q.from_unit(n[0], n[1] or calc.input(key).unit)))
            elif b.kind == "criterion" and isinstance(v, bool):
                crits.append((where, b, v))
            elif b.kind == "choice_criterion":
                for label, clauses in b.options:
                    crits.append((where, MBinding("criterion", clauses=clauses), label == v))
            elif b.kind == "gcs_component":
                pts = next((c.value for c in calc.input(key).choices if c.label == v), None)
                if isinstance(pts, int):
                    gcs_parts.setdefault(b.component, []).append((where, pts))
    one: dict[str, float] = {}
    for q, xs in seen.items():
        quantity = cat.quantities[q]
        tol = max(quantity.tolerance(), 0.002 * abs(xs[0][1]))
        bad = [w for w, x in xs if abs(x - xs[0][1]) > tol]
        if bad:
            problems.append(f"{q}: {xs[0][0]} vs {bad}")
        one[q] = xs[0][1]
    for comp, xs in gcs_parts.items():
        if len({x for _, x in xs}) > 1:
            problems.append(f"gcs {comp}: {xs}")
    if len(gcs_parts) == 3:
        total = sum(xs[0][1] for xs in gcs_parts.values())
        if "gcs" in one and abs(one["gcs"] - total) > 0.5:
            problems.append(f"gcs: total {one['gcs']:g} but components add to {total}")
        one.setdefault("gcs", total)
    base = {k: x for k, x in one.items() if not cat.quantities[k].derived}
    for q, x in derived_values(base, age_years, sex, weight_kg).items():
        if q in one:
            tol = 1.0 if cat.quantities[q].decimals == 0 else 0.02
            if abs(one[q] - x) > tol + 1e-9:
                problems.append(f"{q}: {one[q]:g} given, its parts give {x:g}")
        else:
            one[q] = x
    for where, b, v in crits:
        held = [clause_holds(c, one[c.quantity], sex, age_years) for c in b.clauses if c.quantity in one]
        known_all = all(c.quantity in one for c in b.clauses)
        if any(held) and not v:
            problems.append(f"criterion {where} is False but its measurements meet it ({_show(b, one)})")
        elif known_all and not any(held) and v and not (age_years is None and any(c.age for c in b.clauses)):
            problems.append(f"criterion {where} is True but its measurements do not meet it ({_show(b, one)})")
    return problems


def _show(b: MBinding, one: dict[str, float]) -> str:
    return ", ".join(f"{q}={one[q]:g}" for q in dict.fromkeys(c.quantity for c in b.clauses) if q in one)
