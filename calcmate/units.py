"""Quantities and unit conversion.

Clinicians mix units (creatinine in mg/dL or µmol/L, weight in lb or kg, temperature in °F or °C).
Generic dimensional conversion is delegated to ``pint``; analyte-specific conversions between mass
and molar concentration live in one table, ``ANALYTES``, so each molar factor is written once.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
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


# -- numbers: decimal marks and digit grouping --------------------------------------------------
# "1,250" is 1250 with an English thousands separator and 1.25 with a decimal comma. The reading is
# decided from context and never guessed: (1) the digits' structure ("12,345,678", "1,234.5", "1,5",
# "0,250", "1234,5" each have one reading); (2) a plausible range for the quantity (the caller's, or the
# field's in ``PLAUSIBLE``); (3) the document's decimal mark (an argument, or ``decimal_mark_context``,
# e.g. detected by ``detect_decimal_mark`` over the whole note). Still ambiguous: AmbiguousNumberError.

_NUM = r"[-+]?(?:\d[\d.,]*\d|\d)(?:[eE][-+]?\d+)?|[-+]?[.,]\d+(?:[eE][-+]?\d+)?"
_QTY_RE = re.compile(rf"^\s*({_NUM})\s*(.*?)\s*$")

_DECIMAL_MARK: contextvars.ContextVar[str | None] = contextvars.ContextVar("calcmate_decimal_mark", default=None)


class AmbiguousNumberError(ValueError):
    """A number whose decimal mark cannot be decided from context (``1,250``: 1250 or 1.25?)."""

    def __init__(self, text: str, readings: tuple[float, ...], field: str | None = None, why: str = ""):
        self.text, self.readings, self.field = text, readings, field
        where = f"field {field!r}: " if field else ""
        alts = " or ".join(f"{r:g}" for r in readings)
        super().__init__(
            f"{where}{text!r} is ambiguous ({alts}): a comma before exactly three digits may be a thousands "
            f"separator or a decimal comma{'; ' + why if why else ''}. Write the number without a thousands "
            "separator and with a decimal point (e.g. 1250 or 1.25), or state the document's decimal mark")


@contextlib.contextmanager
def decimal_mark_context(mark: str | None) -> Iterator[None]:
    """Within this block numbers are read with ``mark`` ('.' or ',') as the document's decimal mark."""
    if mark not in (None, ".", ","):
        raise ValueError(f"decimal mark must be '.' or ',', not {mark!r}")
    token = _DECIMAL_MARK.set(mark)
    try:
        yield
    finally:
        _DECIMAL_MARK.reset(token)


# Plausible ranges for quantities whose two readings both pass ordinary validation ranges, keyed by
# normalised field-name words: (low, high, unit). A reading outside is not what the writer meant.
PLAUSIBLE: dict[str, tuple[float, float, str]] = {
    "d dimer": (20.0, 100000.0, "ng/mL"),  # FEU; assays report nothing below ~20-200 ng/mL
}


def _norm_words(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", _nfkc(text).lower()).split())


def field_plausible(field: str | None, value: float, unit: str | None) -> bool | None:
    """Whether ``value unit`` is plausible for ``field`` by ``PLAUSIBLE`` (None: no rule applies)."""
    if not field or not unit:
        return None
    words = f" {_norm_words(field)} "
    for key, (lo, hi, u) in PLAUSIBLE.items():
        if f" {key} " in words:
            try:
                v = convert(value, unit, u)
            except UnitError:
                return None
            return lo <= v <= hi
    return None


_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")
_DOT_GROUPED = re.compile(r"\d{1,3}(?:\.\d{3})+")


def _readings(num: str) -> tuple[list[float], str | None]:
    """The readings of a numeral's digits: one when its structure decides, two when a single comma
    precedes exactly three digits (thousands first, then decimal). The second item is a reason the
    numeral is malformed (then no readings)."""
    sign = ""
    if num[0] in "+-":
        sign, num = num[0], num[1:]
    mant, exp = re.match(r"^([^eE]*)((?:[eE][-+]?\d+)?)$", num).groups()
    f = lambda m: float(sign + m + exp)  # noqa: E731
    if "," not in mant:
        if mant.count(".") <= 1:
            return [f(mant)], None
        if _DOT_GROUPED.fullmatch(mant):  # 12.345.678: dots as thousands separators
            return [f(mant.replace(".", ""))], None
        return [], "more than one decimal point"
    if "." in mant:  # both marks: the last one is the decimal mark, the other groups thousands
        if mant.rfind(".") > mant.rfind(","):
            int_part, frac = mant.rsplit(".", 1)
            if _GROUPED.fullmatch(int_part):
                return [f(int_part.replace(",", "") + "." + frac)], None
        else:
            int_part, frac = mant.rsplit(",", 1)
            if _DOT_GROUPED.fullmatch(int_part):
                return [f(int_part.replace(".", "") + "." + frac)], None
        return [], "its thousands separators are not in groups of three digits"
    if mant.count(",") > 1:
        if _GROUPED.fullmatch(mant):  # 12,345,678
            return [f(mant.replace(",", ""))], None
        return [], "its commas are not thousands separators in groups of three digits"
    int_part, frac = mant.split(",")
    if not frac:
        return [], "nothing follows the comma"
    if len(frac) == 3 and _GROUPED.fullmatch(mant) and not (int_part.startswith("0") or int_part == ""):
        return [f(int_part + frac), f(int_part + "." + frac)], None  # 1,250
    return [f((int_part or "0") + "." + frac)], None  # 1,5 / 0,250 / 1234,5: a decimal comma only


def detect_decimal_mark(texts: Iterable[str] | str) -> str | None:
    """The decimal mark a document uses, from numerals whose structure decides it ('.', ',', or None
    when there is no evidence or the evidence conflicts)."""
    if isinstance(texts, str):
        texts = [texts]
    dot = comma = 0
    for t in texts:
        for m in re.finditer(r"(?<![\d.,])\d[\d.,]*\d(?![\d.,]*\d)", str(t)):
            n = m.group(0)
            if "," in n and "." in n:
                dot += n.rfind(".") > n.rfind(",")
                comma += n.rfind(",") > n.rfind(".")
            elif "," in n:
                if n.count(",") > 1 and _GROUPED.fullmatch(n):
                    dot += 1  # 12,345,678: English grouping
                elif n.count(",") == 1 and len(readings := _readings(n)[0]) == 1:
                    comma += 1  # 1,5 or 0,25: a decimal comma
            elif n.count(".") == 1 and len(n.split(".")[1]) != 3:
                dot += 1  # 7.35: a decimal point
    if dot and not comma:
        return "."
    if comma and not dot:
        return ","
    return None


def parse_number(
    num: str, *, field: str | None = None, unit: str | None = None, decimal_mark: str | None = None,
    plausible: Callable[[float], bool] | None = None,
) -> float:
    """Read one numeral with thousands separators or a decimal comma, deciding from context (module
    comment above); raise AmbiguousNumberError (naming ``field``) when context cannot decide."""
    readings, bad = _readings(num.strip())
    if bad:
        where = f"field {field!r}: " if field else ""
        raise ValueError(f"{where}{num!r} is not a number: {bad}")
    if len(readings) == 1:
        return readings[0]
    ok = [r for r in readings if (plausible(r) if plausible is not None else True)
          and field_plausible(field, r, unit) is not False]
    if len(ok) == 1:
        return ok[0]
    if not ok:
        raise AmbiguousNumberError(num, tuple(readings), field, "neither reading is plausible here")
    mark = decimal_mark if decimal_mark is not None else _DECIMAL_MARK.get()
    if mark == ".":
        return readings[0]
    if mark == ",":
        return readings[1]
    raise AmbiguousNumberError(num, tuple(readings), field, "both readings are plausible and the document's "
                               "decimal mark is not known")


def parse_quantity(
    text: str, *, field: str | None = None, decimal_mark: str | None = None,
    plausible: Callable[[float, str | None], bool] | None = None,
) -> tuple[float, str | None]:
    """Parse "130 mEq/L" -> (130.0, "mEq/L"); "42" -> (42.0, None); "1,5 mg/dL" -> (1.5, "mg/dL").

    Thousands separators and decimal commas are read as ``parse_number`` decides (``plausible(value,
    unit)`` and ``decimal_mark`` are the caller's context). Raises ValueError if no number leads, and
    AmbiguousNumberError (a ValueError naming ``field``) when the decimal mark cannot be decided.
    """
    m = _QTY_RE.match(str(text))
    if not m:
        raise ValueError(f"no number at the start of {text!r}")
    unit = m.group(2) or None
    pred = (lambda v: plausible(v, unit)) if plausible is not None else None
    num = parse_number(m.group(1), field=field, unit=unit, decimal_mark=decimal_mark, plausible=pred)
    return num, unit
