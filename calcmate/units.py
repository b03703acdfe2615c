"""Quantities and unit conversion.

Clinicians mix units (creatinine in mg/dL or µmol/L, weight in lb or kg, temperature in °F or °C).
Generic dimensional conversion is delegated to ``pint``; analyte-specific conversions between mass
and molar concentration live in one table, ``ANALYTES``, so each molar factor is written once.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import pint


class UnitError(ValueError):
    """A unit that is unknown, or cannot be converted to the requested one."""


_UREG: pint.UnitRegistry | None = None


def ureg() -> pint.UnitRegistry:
    global _UREG
    if _UREG is None:
        u = pint.UnitRegistry(autoconvert_offset_to_baseunit=True)
        u.define("mmHg_ = millimeter_Hg")  # explicit alias; pint already knows mmHg
        u.define("cmH2O = centimeter_H2O")
        u.define("equivalent = [charge_equivalent] = Eq")
        u.define("osmole = mole = Osm")
        u.define("unit_ = [enzyme_unit] = U = IU")
        u.define("beat = [] ")
        u.define("breath = []")
        u.define("drop = [] = gtt")
        u.define("MET = 3.5 * milliliter / kilogram / minute")
        u.define("wood_unit = millimeter_Hg * minute / liter = WU")  # vascular resistance (hybrid reference unit)
        _UREG = u
    return _UREG


# Molar masses (g/mol) used to convert between mass and molar concentration.
# Valence is used for mEq. Sources: standard clinical chemistry conversion tables.
@dataclass(frozen=True)
class Analyte:
    molar_mass: float  # g/mol
    valence: int = 1


ANALYTES: dict[str, Analyte] = {
    "creatinine": Analyte(113.12),
    "glucose": Analyte(180.16),
    "bun": Analyte(28.02),  # urea nitrogen: 2 N atoms per urea
    "urea": Analyte(60.06),
    "calcium": Analyte(40.08, 2),
    "magnesium": Analyte(24.305, 2),
    "phosphate": Analyte(30.97),
    "sodium": Analyte(22.99),
    "potassium": Analyte(39.10),
    "chloride": Analyte(35.45),
    "bicarbonate": Analyte(61.02),
    "bilirubin": Analyte(584.66),
    "cholesterol": Analyte(386.65),
    "triglycerides": Analyte(885.7),
    "lactate": Analyte(90.08),
    "ethanol": Analyte(46.07),
    "uric_acid": Analyte(168.11),
    "albumin": Analyte(66500.0),
    "hemoglobin": Analyte(16000.0),  # g/dL <-> mmol/L (monomer) convention
}

# Free-text spellings seen in notes and benchmarks -> pint-parsable strings.
_ALIASES: dict[str, str] = {
    "mm hg": "mmHg",
    "wood units": "wood_unit",
    "wood unit": "wood_unit",
    "mmhg": "mmHg",
    "mm of hg": "mmHg",
    "cm h2o": "cmH2O",
    "cmh2o": "cmH2O",
    "degrees celsius": "degC",
    "degrees celsisus": "degC",  # MedCalc-Bench misspelling
    "degree celsius": "degC",
    "celsius": "degC",
    "°c": "degC",
    "c": "degC",
    "degrees fahrenheit": "degF",
    "degrees fahreinheit": "degF",
    "degree fahrenheit": "degF",
    "fahrenheit": "degF",
    "°f": "degF",
    "f": "degF",
    "beats per minute": "1/min",
    "bpm": "1/min",
    "beats/min": "1/min",
    "breaths per minute": "1/min",
    "breaths/min": "1/min",
    "/min": "1/min",
    "per minute": "1/min",
    "mc/kg/min": "ug/kg/min",  # MedCalc-Bench misspelling of mcg/kg/min
    "msec": "ms",
    "msecs": "ms",
    "years": "year",
    "yrs": "year",
    "yr": "year",
    "y": "year",
    "months": "month",
    "mo": "month",
    "weeks": "week",
    "wk": "week",
    "days": "day",
    "lbs": "lb",
    "pounds": "lb",
    "inches": "inch",
    "in": "inch",
    "meq/l": "mEq/L",
    "mmol/l": "mmol/L",
    "µmol/l": "umol/L",
    "umol/l": "umol/L",
    "μmol/l": "umol/L",
    "mg/dl": "mg/dL",
    "g/dl": "g/dL",
    "g/l": "g/L",
    "mg/l": "mg/L",
    "µiu/ml": "uIU/mL",
    "uiu/ml": "uIU/mL",
    "μiu/ml": "uIU/mL",
    "miu/l": "mIU/L",
    "u/l": "U/L",
    "iu/l": "U/L",
    "mosm/kg": "mOsm/kg",
    "mosm/l": "mOsm/L",
    "%": "percent",
    "kg/m^2": "kg/m**2",
    "kg/m2": "kg/m**2",
    "m^2": "m**2",
    "m2": "m**2",
    "mg/m2": "mg/m**2",
    "mg/m^2": "mg/m**2",
    "mg/m²": "mg/m**2",
}

# Cell counts are written with the counted volume only ("µL", "L", "mm^3", "10^9/L").
# Canonical count unit is "10^9/L" (== 10^3/µL). Values are per that volume.
_COUNT_PER: dict[str, float] = {
    "l": 1e-9,
    "/l": 1e-9,
    "per l": 1e-9,
    "µl": 1e-3,
    "ul": 1e-3,
    "μl": 1e-3,
    "/µl": 1e-3,
    "/ul": 1e-3,
    "per µl": 1e-3,
    "mm^3": 1e-3,
    "m^3": 1e-3,  # MedCalc-Bench writes mm^3 as "m^3" for WBC counts
    "mm3": 1e-3,
    "/mm3": 1e-3,
    "/mm^3": 1e-3,
    "cells/mm3": 1e-3,
    "cells/µl": 1e-3,
    "10^9/l": 1.0,
    "x10^9/l": 1.0,
    "×10^9/l": 1.0,
    "10^3/µl": 1.0,
    "10^3/ul": 1.0,
    "x10^3/µl": 1.0,
    "k/µl": 1.0,
    "k/ul": 1.0,
    "10^3/mm^3": 1.0,
    "10^3/mm3": 1.0,
}
COUNT_UNIT = "10^9/L"


_SUPERSCRIPTS = str.maketrans({"²": "^2", "³": "^3", "⁶": "^6", "⁹": "^9", "⁻": "-"})


def _nfkc(unit: str) -> str:
    """NFKC, after turning superscript exponents into ``^n`` (NFKC alone would make 10⁹ read 109)."""
    return unicodedata.normalize("NFKC", unit.translate(_SUPERSCRIPTS)).replace("μ", "µ")


def clean_unit(unit: str) -> str:
    """Normalise a free-text unit spelling to a pint-parsable string (or a count key)."""
    u = _nfkc(unit).strip()
    key = re.sub(r"\s+", " ", u.lower())
    if key in _ALIASES:
        return _ALIASES[key]
    return u.replace("µ", "u").replace("^", "**")


_COUNT_BY_KEY = {k.replace(" ", ""): f for k, f in _COUNT_PER.items()}


def _count_key(unit: str) -> str:
    return _nfkc(unit).strip().lower().replace(" ", "")


def _is_count(unit: str) -> bool:
    return _count_key(unit) in _COUNT_BY_KEY


def _count_factor(unit: str) -> float:
    try:
        return _COUNT_BY_KEY[_count_key(unit)]
    except KeyError:
        raise UnitError(f"unknown count unit {unit!r}") from None


@lru_cache(maxsize=4096)
def _parse_unit(unit: str) -> pint.Unit:
    try:
        return ureg().parse_units(clean_unit(unit))
    except Exception as e:  # pint raises several error types
        raise UnitError(f"unknown unit {unit!r}") from e


def _molar_kind(u: pint.Unit) -> str | None:
    """'mass' for mass/volume, 'molar' for substance/volume, 'eq' for equivalents/volume, else None."""
    dim = ureg().get_dimensionality(u)
    for kind, ref in (("mass", "g/L"), ("molar", "mol/L"), ("eq", "Eq/L")):
        if dim == ureg().get_dimensionality(ref):
            return kind
    return None


_CANON = {"mass": "g/L", "molar": "mol/L", "eq": "Eq/L"}


def convert(value: float, from_unit: str, to_unit: str, analyte: str | None = None) -> float:
    """Convert ``value`` from ``from_unit`` to ``to_unit``.

    ``analyte`` (a key of ``ANALYTES``) enables mass<->molar conversion; ``analyte="count"``
    converts cell counts between per-L, per-µL/mm³ and 10⁹/L.
    """
    if from_unit == to_unit:
        return float(value)
    if analyte == "count" or (_is_count(from_unit) and _is_count(to_unit)):
        return float(value) * _count_factor(from_unit) / _count_factor(to_unit)
    src, dst = _parse_unit(from_unit), _parse_unit(to_unit)
    q = ureg().Quantity(float(value), src)
    try:
        return float(q.to(dst).magnitude)
    except pint.DimensionalityError:
        pass
    ks, kd = _molar_kind(src), _molar_kind(dst)
    if analyte and ks and kd and ks != kd:
        a = ANALYTES.get(analyte)
        if a is None:
            raise UnitError(f"no molar mass known for analyte {analyte!r}")
        # to mol/L first, then to the destination kind
        mag = q.to(_CANON[ks]).magnitude
        mol = mag / a.molar_mass if ks == "mass" else mag / a.valence if ks == "eq" else mag
        out = mol * a.molar_mass if kd == "mass" else mol * a.valence if kd == "eq" else mol
        return float(ureg().Quantity(out, _CANON[kd]).to(dst).magnitude)
    raise UnitError(
        f"cannot convert {from_unit!r} to {to_unit!r}"
        + ("" if analyte else " (mass<->molar needs an analyte)")
    )


def is_known_unit(unit: str) -> bool:
    if _is_count(unit):
        return True
    try:
        _parse_unit(unit)
        return True
    except UnitError:
        return False


_NUM = r"[-+]?(?:\d+(?:[.,]\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_QTY_RE = re.compile(rf"^\s*({_NUM})\s*(.*?)\s*$")


def parse_quantity(text: str) -> tuple[float, str | None]:
    """Parse "130 mEq/L" -> (130.0, "mEq/L"); "42" -> (42.0, None). Raises ValueError if no number leads."""
    m = _QTY_RE.match(str(text))
    if not m:
        raise ValueError(f"no number at the start of {text!r}")
    num = m.group(1).replace(",", ".") if m.group(1).count(",") == 1 and "." not in m.group(1) else m.group(1).replace(",", "")
    unit = m.group(2) or None
    return float(num), unit
