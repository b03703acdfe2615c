"""The one answer-matching logic.

Two rule sets share the parsing here:

* ``medcalc_correct`` -- MedCalc-Bench's published rules: dates exact, gestational age
  (weeks, days) exact, integers ``round(answer) == truth``, decimals ``lower <= answer <= upper``.
* ``values_match`` -- the generic rule for MedMCP-Calc Quantitative Precision and the synthesizer's
  verifier: decimals within ±``rel_tol`` (5%), integers exact after rounding, categories equal
  after ``normalize_name``, quantities with units converted before comparing ("1200.0 mg" vs 1200,
  "1.2 g" vs "1200 mg"), dates and gestational ages exact.

Nothing here raises on a malformed *answer*: a model's answer that cannot be read is simply wrong.
A malformed *truth* (a benchmark row we cannot read) raises ``ValueError``.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import re
from typing import Any

from calcmate.calculators.spec import normalize_name
from calcmate.units import UnitError, convert, is_known_unit, parse_quantity

__all__ = [
    "medcalc_correct", "values_match", "parse_date", "parse_gestational_age", "parse_number",
]

_DATE_FORMATS = ("%m/%d/%Y", "%Y-%m-%d", "%m-%d-%Y", "%m/%d/%y", "%B %d, %Y", "%d %B %Y", "%b %d, %Y")
_GA_RE = re.compile(r"(\d+)\s*(?:weeks?|wks?|w)\b\W*(?:and\s*)?(?:(\d+)\s*(?:days?|d)\b)?", re.I)


def parse_date(x: Any) -> dt.date | None:
    """A date from a date object or a string in the usual formats; None if it is not a date."""
    if isinstance(x, dt.datetime):
        return x.date()
    if isinstance(x, dt.date):
        return x
    if not isinstance(x, str):
        return None
    s = x.strip().strip("'\"")
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(s, fmt).date()
        except ValueError:
            continue
    return None


def parse_gestational_age(x: Any) -> tuple[int, int] | None:
    """(weeks, days) from ``(35, 4)``, ``('35 weeks', '4 days')``, its string form, or
    "31 Weeks 1 Day"; None if ``x`` does not look like a gestational age."""
    if isinstance(x, (tuple, list)) and len(x) == 2:
        if all(isinstance(p, int) and not isinstance(p, bool) for p in x):
            return int(x[0]), int(x[1])
        x = f"{x[0]} {x[1]}"
    if not isinstance(x, str):
        return None
    s = x.strip()
    if s.startswith("(") and s.endswith(")"):
        try:
            lit = ast.literal_eval(s)
        except (ValueError, SyntaxError):
            lit = None
        if isinstance(lit, tuple) and len(lit) == 2:
            if all(isinstance(p, int) for p in lit):
                return int(lit[0]), int(lit[1])
            s = f"{lit[0]} {lit[1]}"
    m = _GA_RE.search(s)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2) or 0)


def _split_unit(text: str) -> tuple[float, str | None]:
    """Number and the longest leading run of words that is a known unit ("348 mOsm/kg Calculated")."""
    value, rest = parse_quantity(text)
    if not rest:
        return value, None
    words = rest.split()
    for n in range(len(words), 0, -1):
        cand = " ".join(words[:n])
        if is_known_unit(cand):
            return value, cand
    return value, None


def parse_number(x: Any) -> tuple[float, str | None] | None:
    """(value, unit or None) from a number, "[value, unit]" or a string leading with a number."""
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return (float(x), None) if math.isfinite(x) else None
    if isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[0], (int, float)) and not isinstance(x[0], bool):
        return float(x[0]), (str(x[1]) if x[1] else None)
    if isinstance(x, str):
        try:
            v, u = _split_unit(x.strip())
        except ValueError:
            return None
        return (v, u) if math.isfinite(v) else None
    return None


def _is_integral_text(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    if isinstance(x, str):
        m = re.match(r"^\s*[-+]?\d+(?![\d.,])", x)
        return bool(m)
    return False


# -- MedCalc-Bench ---------------------------------------------------------------------------------
def medcalc_correct(output_type: str, answer: Any, truth: Any, lower: Any = None, upper: Any = None) -> bool:
    """MedCalc-Bench's rule for one row: ``output_type`` is the row's "Output Type".

    Gestational-age rows (their truth is a "(weeks, days)" tuple, Output Type "integer") are exact.
    """
    if answer is None:
        return False
    otype = (output_type or "").strip().lower()
    if otype == "date":
        t = parse_date(truth)
        if t is None:
            raise ValueError(f"truth {truth!r} is not a date")
        return parse_date(answer) == t
    ga_truth = parse_gestational_age(truth) if not isinstance(truth, (int, float)) else None
    if ga_truth is not None:
        return parse_gestational_age(answer) == ga_truth
    a = parse_number(answer)
    if a is None:
        return False
    if otype == "integer":
        t = parse_number(truth)
        if t is None:
            raise ValueError(f"truth {truth!r} is not a number")
        return round(a[0]) == round(t[0])
    if otype == "decimal":
        lo, hi = parse_number(lower), parse_number(upper)
        if lo is None or hi is None:
            raise ValueError(f"decimal row needs numeric Lower/Upper Limit, got {lower!r}, {upper!r}")
        return lo[0] <= a[0] <= hi[0]
    raise ValueError(f"unknown MedCalc-Bench output type {output_type!r}")


# -- generic (MedMCP-Calc QP, synthesizer verifier) --------------------------------------------------
def values_match(answer: Any, truth: Any, rel_tol: float = 0.05, abs_tol: float = 1e-9) -> bool:
    """Does ``answer`` match ``truth``? See the module docstring for the rules.

    Units: when both sides carry a unit they are converted to the truth's unit first; when only
    one does, the numbers are compared as they are (a bare 1200 matches "1200.0 mg").
    """
    if answer is None or truth is None:
        return False
    # dates
    td = parse_date(truth)
    if td is not None:
        return parse_date(answer) == td
    # gestational ages ("31 Weeks 1 Day", (35, 4))
    if not isinstance(truth, (int, float)):
        tga = parse_gestational_age(truth)
        if tga is not None:
            return parse_gestational_age(answer) == tga
    if isinstance(truth, str) and isinstance(answer, str) and normalize_name(answer) == normalize_name(truth):
        return True
    t = None if isinstance(truth, str) and _LABEL_RE.match(truth) else parse_number(truth)
    # categories: truth that is not a number, or a label such as "2A" / "Class III"
    if t is None or (isinstance(truth, str) and t[1] is None and not _only_number(truth)):
        if isinstance(answer, (str, int, float)) and not isinstance(answer, bool):
            if normalize_name(answer) == normalize_name(truth):
                return True
        if isinstance(answer, bool) or isinstance(truth, bool):
            return answer == truth
        return False
    a = parse_number(answer)
    if a is None:
        return False
    av, au = a
    tv, tu = t
    if au and tu and normalize_name(au) != normalize_name(tu):
        try:
            av = convert(av, au, tu)
        except UnitError:
            return False
    if _is_integral_text(truth) and isinstance(truth, int):
        return round(av) == tv
    return abs(av - tv) <= max(rel_tol * abs(tv), abs_tol)


# A score label such as "2A", "3b" or "IIb": a number glued to one letter is a category, not 2 amperes.
_LABEL_RE = re.compile(r"^\s*\d+[A-Za-z]\s*$")


def _only_number(s: str) -> bool:
    try:
        v, u = parse_quantity(s)
    except ValueError:
        return False
    return u is None
