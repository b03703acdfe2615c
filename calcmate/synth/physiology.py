"""Hard physiological limits: what a living patient's lab or vital sign can be, and a check over EHR rows.

The table is data (``physiology.yaml`` beside this file, each row with a cited source) validated by
pydantic when loaded. The materializer keeps every value it stores (decoy history included) inside
these limits and moves history series by at most a row's ``step`` per day; audits and tests run
``physiology_violations`` over the rows a SQL query returns. A value in a unit the table does not use
is converted through ``calcmate.units``; a name is resolved through the row's aliases, then through
the EHR lexicon's patterns, with the specimen (urine, pleural fluid, ...) kept apart from serum.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from calcmate.calculators.spec import normalize_name
from calcmate.units import UnitError, convert, is_known_unit

DEFAULT_TABLE = Path(__file__).with_name("physiology.yaml")


class Limit(BaseModel):
    """One analyte or vital sign: canonical unit, inclusive hard limits, the largest daily change."""

    model_config = ConfigDict(extra="forbid")
    unit: str | None
    analyte: str | None = None
    min: float
    max: float
    step: float | None = None
    step_rel: float | None = None
    source: str
    aliases: list[str] = Field(default_factory=list)
    note: str = ""

    @model_validator(mode="after")
    def _check(self) -> "Limit":
        if not self.min < self.max:
            raise ValueError(f"min {self.min} must be below max {self.max}")
        if (self.step is None) == (self.step_rel is None):
            raise ValueError("give exactly one of step (absolute) or step_rel (relative)")
        if self.unit is not None and not is_known_unit(self.unit):
            raise ValueError(f"unknown unit {self.unit!r}")
        return self

    def max_step(self, value: float, days: float = 1.0) -> float:
        """The largest plausible change of ``value`` over ``days``."""
        per_day = self.step if self.step is not None else abs(value) * (self.step_rel or 0.0)
        return per_day * max(days, 0.0)

    def clamp(self, x: float) -> float:
        return min(self.max, max(self.min, x))


class Table(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sources: dict[str, str]
    limits: dict[str, Limit]

    @model_validator(mode="after")
    def _sources(self) -> "Table":
        bad = {k: v.source for k, v in self.limits.items() if v.source not in self.sources}
        if bad:
            raise ValueError(f"limits cite unknown sources {bad} (sources: {sorted(self.sources)})")
        return self


def load(path: str | Path | None = None) -> Table:
    """Parse and validate a limits table; errors name the file and the row."""
    p = Path(path) if path else DEFAULT_TABLE
    d = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    try:
        return Table.model_validate(d)
    except Exception as e:
        raise ValueError(f"{p}: {e}") from None


@lru_cache(maxsize=None)
def _table() -> Table:
    return load()


def limits() -> dict[str, Limit]:
    """Every row of the default table, by key."""
    return dict(_table().limits)


@lru_cache(maxsize=None)
def _alias_index() -> dict[str, str]:
    idx: dict[str, str] = {}
    for key, lim in _table().limits.items():
        for n in (key, key.replace("_", " "), *lim.aliases):
            idx.setdefault(normalize_name(n), key)
    return idx


_SPECIMENS = (("urine", r"\b(urine|urinary)\b"), ("pleural", r"\bpleural\b"), ("csf", r"\b(csf|cerebrospinal)\b"),
              ("ascites", r"\b(ascitic|ascites|peritoneal)\b"), ("infusate", r"\b(infusate|infusion|fluid|drain\w*|dialysate)\b"))


def specimen_of(name: str, sample: str | None = None) -> str:
    """``blood`` unless the item name or the sample column names another specimen."""
    for text in (sample or "", name):
        t = normalize_name(text)
        for spec, pat in _SPECIMENS:
            if re.search(pat, t):
                return spec
    return "blood"


def resolve(name: str, sample: str | None = None) -> str | None:
    """The table key an item name means (None: not in the table, or a specimen it has no row for)."""
    from calcmate.ehr import lexicon as lx  # the EHR's own item patterns

    spec = specimen_of(name, sample)
    n = normalize_name(name)
    idx = _alias_index()
    if spec == "blood" and n in idx:
        return idx[n]
    bare = normalize_name(re.sub(r"(?i)\b(serum|plasma|blood|arterial|venous|urine|urinary)\b", " ", name))
    key = idx.get(bare) if spec == "blood" else None
    if key is None:
        for item in lx.LABS:
            if re.search(item.pattern, bare):
                key = item.key
                break
    if key is None:
        for v in lx.VITALS:
            if re.search(v.pattern, n):
                key = v.column
                break
    if key is None:
        return None
    key = key if spec == "blood" else f"{spec}_{key}"
    return key if key in _table().limits else None


def normalize_unit(unit: str | None) -> str | None:
    """Spellings calcmate.units does not parse, made parsable: eGFR "per 1.73 m²", "×10³/µL"."""
    if not unit:
        return unit
    unit = re.sub(r"\s*/\s*1\.73\s*m(2|²|\^2|\*\*2)\s*$", "", unit)
    return re.sub(r"^\s*[×xX]\s*(?=10)", "", unit)


def _canonical(value: float, unit: str | None, lim: Limit) -> float:
    unit = normalize_unit(unit)
    if not unit or not lim.unit or normalize_name(unit) == normalize_name(lim.unit):
        return value
    return convert(value, unit, lim.unit, lim.analyte)


def canonical_value(key: str, value: float, unit: str | None) -> float:
    """``value`` in row ``key``'s unit (raises UnitError when the unit does not convert)."""
    return _canonical(float(value), unit, _table().limits[key])


def check_value(name: str, value: float, unit: str | None = None, sample: str | None = None) -> str | None:
    """None if ``value`` (in ``unit``; None: the row's unit) is plausible for ``name``, else why not.

    Names the table does not know (and specimens it has no row for) are not judged: None."""
    key = resolve(name, sample)
    if key is None:
        return None
    lim = _table().limits[key]
    try:
        x = _canonical(float(value), unit, lim)
    except (UnitError, ValueError, TypeError):
        return f"{name} {value:g} {unit}: unit not convertible to {lim.unit} ({key})"
    eps = 1e-9 * max(1.0, abs(lim.max))  # unit conversion round-off at the bound
    if math.isnan(x) or not lim.min - eps <= x <= lim.max + eps:
        shown = f"{value:g} {unit or lim.unit or ''}".strip()
        return f"{name} {shown} outside {lim.min:g}-{lim.max:g}{' ' + lim.unit if lim.unit else ''} ({key}, {lim.source})"
    return None


def _number(text: Any) -> float | None:
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*([-+]?\d+(?:\.\d+)?)\s*", str(text))
    return float(m.group(1)) if m else None


def physiology_violations(rows: Iterable[dict[str, Any]]) -> list[str]:
    """One line per implausible value in EHR rows as SQL returns them (dicts).

    laboratory_result rows: ``test_item_name``, ``test_result``, ``unit``, ``sample_name``; vital_signs
    rows: one column per vital (TEXT, the lexicon's units); other rows may give ``name``/``value``/``unit``."""
    from calcmate.ehr import lexicon as lx

    out: list[str] = []
    for r in rows:
        who = r.get("patient_id", "?")
        if "test_item_name" in r:
            x = _number(r.get("test_result"))
            if x is not None:
                why = check_value(str(r["test_item_name"]), x, r.get("unit") or None, r.get("sample_name"))
                if why:
                    out.append(f"laboratory_result {who}: {why}")
            continue
        if "name" in r and "value" in r:
            x = _number(r["value"])
            if x is not None and (why := check_value(str(r["name"]), x, r.get("unit"))):
                out.append(f"{who}: {why}")
            continue
        for v in lx.VITALS:
            x = _number(r.get(v.column))
            if x is None:
                continue
            lim = _table().limits.get(v.column)
            if lim is not None and not lim.min <= x <= lim.max:
                out.append(f"vital_signs {who}: {v.column} {x:g} {lim.unit or ''} outside {lim.min:g}-{lim.max:g} "
                           f"({lim.source})")
    return out
