"""The declarative calculator specification.

A calculator is data (inputs, output, interpretation bands, reference) plus one pure ``compute``
function over validated, canonical-unit inputs. Everything else -- validation, unit conversion,
rounding, interpretation, the reference document served by the MCP reference tool -- is done here
once, for every calculator.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from calcmate.domains import Domain
from calcmate.units import AmbiguousNumberError, UnitError, convert, parse_number, parse_quantity

InputType = Literal["number", "integer", "bool", "choice", "date"]
OutputType = Literal["decimal", "integer", "category", "date"]


class CalculatorInputError(ValueError):
    """A calculator input that is missing, out of range, of the wrong type, or in an unknown unit."""

    def __init__(self, calculator: str, field: str, reason: str):
        self.calculator, self.field, self.reason = calculator, field, reason
        super().__init__(f"{calculator}: input {field!r}: {reason}")


def normalize_name(text: str) -> str:
    """Case-, punctuation- and Unicode-insensitive key: "SpO₂/FiO₂ Ratio" == "spo2 fio2 ratio"."""
    t = unicodedata.normalize("NFKC", str(text)).casefold()
    t = t.replace("µ", "u").replace("μ", "u").replace("’", "'")
    t = unicodedata.normalize("NFKD", t)
    t = "".join(c for c in t if not unicodedata.combining(c))
    t = re.sub(r"[^0-9a-z]+", " ", t)
    return " ".join(t.split())


@dataclass(frozen=True)
class Choice:
    """One option of a categorical input. ``value`` is what ``compute`` receives (often points)."""

    label: str
    value: Any
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Input:
    """One typed input.

    ``unit`` is the canonical unit ``compute`` receives; values given in other units are
    converted (``analyte`` enables mass<->molar, e.g. creatinine mg/dL<->µmol/L).
    ``aliases`` are other names for this field (MedCalc-Bench entity keys, MedMCP-Calc field text).
    """

    key: str
    label: str
    type: InputType = "number"
    unit: str | None = None
    analyte: str | None = None
    min: float | None = None
    max: float | None = None
    choices: tuple[Choice, ...] = ()
    optional: bool = False
    default: Any = None
    aliases: tuple[str, ...] = ()
    help: str = ""

    def names(self) -> tuple[str, ...]:
        return (self.key, self.label, *self.aliases)

    # -- validation -------------------------------------------------------------------------
    def coerce(self, calc_id: str, raw: Any) -> Any:
        """Validate ``raw`` and return the canonical value; raise CalculatorInputError otherwise."""
        err = lambda reason: CalculatorInputError(calc_id, self.key, reason)  # noqa: E731
        if self.type == "bool":
            return _coerce_bool(raw, err, self)
        if self.type == "choice":
            return self._coerce_choice(raw, err)
        if self.type == "date":
            return _coerce_date(raw, err)
        value, unit = _split_value_unit(raw, err, self)
        if unit is not None and self.unit is not None and not _same_unit(unit, self.unit):
            try:
                value = convert(value, unit, self.unit, self.analyte)
            except UnitError as e:
                raise err(f"{e}; expected {self.unit}") from None
            # 12 significant digits: drop float noise of the conversion, so 100.4 °F is exactly 38 °C
            # and a "> 38 °C" criterion is not met by rounding error.
            value = float(f"{value:.12g}")
        if not math.isfinite(value):
            raise err(f"value {value!r} is not finite")
        if self.min is not None and value < self.min:
            if self.key.startswith("age") and self.min > 0:  # a population limit of the reference, not a typo
                raise err(f"age {value:g} {self.unit or ''} is below the minimum age {self.min:g} {self.unit or ''} "
                          "of the population this calculator was derived and validated in; it is not computed for "
                          "younger patients (use a calculator for that age group)".replace("  ", " "))
            raise err(f"{value:g} {self.unit or ''} is below the allowed minimum {self.min:g}".replace("  ", " "))
        if self.max is not None and value > self.max:
            raise err(f"{value:g} {self.unit or ''} is above the allowed maximum {self.max:g}".replace("  ", " "))
        if self.type == "integer":
            if abs(value - round(value)) > 1e-9:
                raise err(f"{value!r} is not a whole number")
            return int(round(value))
        return float(value)

    def _coerce_choice(self, raw: Any, err: Callable[[str], CalculatorInputError]) -> Any:
        if isinstance(raw, Choice):
            return raw.value
        for c in self.choices:  # exact value match first (e.g. points given directly)
            if not isinstance(raw, (bool, str)) and not isinstance(c.value, (bool, str)) and raw == c.value:
                return c.value
            if isinstance(raw, bool) and isinstance(c.value, bool) and raw is c.value:
                return c.value
        key = normalize_name(raw)
        for c in self.choices:
            if key in {normalize_name(n) for n in (c.label, *c.aliases)} or (
                isinstance(c.value, str) and key == normalize_name(c.value)
            ):
                return c.value
        raise err(f"{raw!r} is not one of {[c.label for c in self.choices]}")

    def describe(self) -> str:
        bits = [f"`{self.key}`: {self.label}"]
        if self.type == "choice":
            bits.append("one of " + "; ".join(f"{c.label} ({c.value})" for c in self.choices))
        elif self.type == "bool":
            bits.append("yes/no")
        elif self.type == "date":
            bits.append("date (YYYY-MM-DD or MM/DD/YYYY)")
        else:
            rng = ""
            if self.min is not None or self.max is not None:
                rng = f", range {self.min if self.min is not None else '-inf'}–{self.max if self.max is not None else 'inf'}"
            bits.append(f"{self.type}{' in ' + self.unit if self.unit else ''}{rng}")
        if self.optional:
            bits.append(f"optional, default {self.default!r}")
        if self.help:
            bits.append(self.help)
        return " — ".join(bits)


def _same_unit(a: str, b: str) -> bool:
    return normalize_name(a) == normalize_name(b)


def _plausible(inp: Input | None) -> Callable[[float, str | None], bool] | None:
    """Whether a reading of an ambiguous numeral ("1,250") falls in the input's allowed range."""
    if inp is None or (inp.min is None and inp.max is None):
        return None

    def ok(value: float, unit: str | None) -> bool:
        if unit is not None and inp.unit is not None and not _same_unit(unit, inp.unit):
            try:
                value = convert(value, unit, inp.unit, inp.analyte)
            except UnitError:
                return True  # the unit error is reported later, not here
        return (inp.min is None or value >= inp.min) and (inp.max is None or value <= inp.max)

    return ok


_TIME_UNITS = {"year", "years", "yr", "yrs", "y", "month", "months", "mo", "week", "weeks", "wk", "wks", "day",
               "days", "d", "hour", "hours", "h", "hr", "hrs"}


def _compound(raw: Any, err, inp: Input | None) -> tuple[float, str | None] | None:
    """A duration written in parts, ``[4, 'years', 3, 'months']`` (MedCalc-Bench ages): the sum, in the
    input's unit (or the first part's). None when ``raw`` is not of that shape."""
    if not (isinstance(raw, (list, tuple)) and len(raw) >= 4 and len(raw) % 2 == 0):
        return None
    parts = list(zip(raw[0::2], raw[1::2]))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(u, str)
               and u.strip().lower() in _TIME_UNITS for v, u in parts):
        return None
    target = (inp.unit if inp is not None and inp.unit else None) or parts[0][1]
    try:
        return sum(convert(float(v), u, target) for v, u in parts), target
    except UnitError as e:
        raise err(f"{e}; expected {target}") from None


def _split_value_unit(raw: Any, err, inp: Input | None = None) -> tuple[float, str | None]:
    field = (inp.label or inp.key) if inp is not None else None
    if isinstance(raw, bool):
        raise err(f"expected a number, got {raw!r}")
    if isinstance(raw, (int, float)):
        return float(raw), None
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        unit = str(raw[1]) if raw[1] not in (None, "") else None
        if isinstance(raw[0], str):  # ['1,250', 'ng/mL']: the numeral is read like any other
            try:
                plaus = _plausible(inp)
                return parse_number(raw[0], field=field, unit=unit,
                                    plausible=(lambda v: plaus(v, unit)) if plaus else None), unit
            except AmbiguousNumberError as e:
                raise err(str(e)) from None
            except ValueError:
                raise err(f"expected [number, unit], got {raw!r}") from None
        try:
            return float(raw[0]), unit
        except (TypeError, ValueError):
            raise err(f"expected [number, unit], got {raw!r}") from None
    compound = _compound(raw, err, inp)
    if compound is not None:
        return compound
    if isinstance(raw, Mapping) and "value" in raw:
        return _split_value_unit((raw["value"], raw.get("unit")), err, inp)
    if isinstance(raw, str):
        try:
            return parse_quantity(raw, field=field, plausible=_plausible(inp))
        except AmbiguousNumberError as e:
            raise err(str(e)) from None
        except ValueError:
            raise err(f"expected a number with optional unit, got {raw!r}") from None
    raise err(f"expected a number, got {type(raw).__name__} {raw!r}")


_TRUE = {"true", "yes", "y", "present", "positive", "1", "t"}
_FALSE = {"false", "no", "n", "absent", "negative", "0", "f", "none"}


def _coerce_bool(raw: Any, err, inp: Input | None = None) -> bool:
    """yes/no. A yes/no input may also list ``choices`` with True/False values (spellings such as
    'Severe' for "moderate to severe CKD"), and a string that is the input's own name means yes
    ('Black' for the input "Black race", aliased 'Black')."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, (int, float)) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        k = raw.strip().lower()
        if k in _TRUE:
            return True
        if k in _FALSE:
            return False
        if inp is not None:
            key = normalize_name(raw)
            for c in inp.choices:
                if isinstance(c.value, bool) and key in {normalize_name(n) for n in (c.label, *c.aliases)}:
                    return c.value
            if key in {normalize_name(n) for n in inp.names()}:
                return True
    extra = [c.label for c in inp.choices] if inp is not None and inp.choices else []
    raise err(f"expected yes/no{' or one of ' + repr(extra) if extra else ''}, got {raw!r}")


# "Not mentioned" (and MedCalc-Bench's typo 'Not mentinoed'): the value is absent, exactly as if the field
# were not given -- the input's default applies if it is optional, else it is a missing required input.
_NOT_MENTIONED = {"not mentioned", "not mentinoed", "not reported", "not documented", "not stated", "not given"}


def is_not_mentioned(raw: Any) -> bool:
    return isinstance(raw, str) and normalize_name(raw) in _NOT_MENTIONED


def _coerce_date(raw: Any, err) -> dt.date:
    if isinstance(raw, dt.datetime):
        return raw.date()
    if isinstance(raw, dt.date):
        return raw
    if isinstance(raw, str):
        for fmt in ("%Y-%m-%d", "%m/%d/%Y", "%m/%d/%y", "%d %B %Y", "%B %d, %Y"):
            try:
                return dt.datetime.strptime(raw.strip(), fmt).date()
            except ValueError:
                continue
    raise err(f"expected a date (YYYY-MM-DD or MM/DD/YYYY), got {raw!r}")


@dataclass(frozen=True)
class Band:
    """Interpretation band: ``lo <= value < hi`` (None = open) maps to ``label``.

    For category outputs, ``match`` is the category it interprets instead.
    """

    label: str
    lo: float | None = None
    hi: float | None = None
    match: str | None = None

    def contains(self, value: Any) -> bool:
        if self.match is not None:
            return normalize_name(value) == normalize_name(self.match)
        if not isinstance(value, (int, float)):
            return False
        return (self.lo is None or value >= self.lo) and (self.hi is None or value < self.hi)


@dataclass(frozen=True)
class Output:
    type: OutputType
    unit: str | None = None
    decimals: int | None = None  # rounding for display/answers; None = no rounding
    label: str = "Result"


@dataclass(frozen=True)
class Reference:
    """The reference document the search/fetch tool serves for this calculator."""

    purpose: str
    when_to_use: str
    formula: str  # formula or points table, markdown
    citation: str  # primary reference
    interpretation: str = ""  # free text beyond the bands
    notes: str = ""  # pitfalls, label disagreements, defaults
    url: str | None = None  # external URL of the primary source, if any


@dataclass(frozen=True)
class Example:
    """A worked example from the primary reference (or original paper).

    ``source`` says where it comes from; ``tol`` is an absolute tolerance for decimals.
    """

    inputs: Mapping[str, Any]
    expected: Any
    source: str
    tol: float = 0.0


@dataclass(frozen=True)
class Result:
    calculator_id: str
    value: Any  # float | int | str | date | tuple
    unit: str | None
    interpretation: str | None
    inputs: Mapping[str, Any]  # canonical inputs used, after defaults and conversion
    details: Mapping[str, Any] = field(default_factory=dict)  # points per criterion, intermediates

    def display(self) -> str:
        v = self.value.isoformat() if isinstance(self.value, dt.date) else self.value
        return f"{v}{' ' + self.unit if self.unit else ''}"


ComputeFn = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Calculator:
    """One executable calculator. ``compute`` gets canonical inputs and returns the value,
    or ``(value, details)`` where details is a dict of intermediate values/points."""

    id: str
    name: str
    domain: Domain
    inputs: tuple[Input, ...]
    compute: ComputeFn
    output: Output
    reference: Reference
    aliases: tuple[str, ...] = ()
    bands: tuple[Band, ...] = ()
    examples: tuple[Example, ...] = ()
    medcalc_bench_id: int | None = None
    tags: tuple[str, ...] = ()  # e.g. organ systems, used by the synthesizer's taxonomy
    produces: tuple[str, ...] = ()  # names of quantities this result can feed (e.g. "gfr")

    @property
    def url(self) -> str:
        return f"calcmate://calculators/{self.id}"

    def input(self, key: str) -> Input:
        for i in self.inputs:
            if i.key == key:
                return i
        raise KeyError(f"{self.id} has no input {key!r}")

    def validate(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Canonicalise inputs by key; missing required fields and unknown keys are errors."""
        known = {i.key for i in self.inputs}
        unknown = sorted(set(values) - known)
        if unknown:
            raise CalculatorInputError(self.id, unknown[0], f"unknown input; expected one of {sorted(known)}")
        out: dict[str, Any] = {}
        for inp in self.inputs:
            raw = values.get(inp.key)
            if is_not_mentioned(raw) and not any(is_not_mentioned(c.label) or any(map(is_not_mentioned, c.aliases))
                                                 for c in inp.choices):
                raw = None  # "Not mentioned" is absence, unless the input offers it as an option of its own
            if raw is None:
                if not inp.optional:
                    raise CalculatorInputError(self.id, inp.key, "missing required input")
                out[inp.key] = inp.default
                continue
            out[inp.key] = inp.coerce(self.id, raw)
        return out

    def __call__(self, values: Mapping[str, Any] | None = None, /, **kw: Any) -> Result:
        vals = self.validate({**(values or {}), **kw})
        raw = self.compute(vals)
        details: Mapping[str, Any] = {}
        if isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[1], Mapping):
            raw, details = raw
        value = self._round(raw)
        return Result(self.id, value, self.output.unit, self.interpret(value), vals, dict(details))

    def _round(self, v: Any) -> Any:
        t = self.output.type
        if t == "integer" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(round(v))
        if t == "decimal" and isinstance(v, (int, float)) and self.output.decimals is not None:
            return round(float(v), self.output.decimals)
        return v

    def interpret(self, value: Any) -> str | None:
        for b in self.bands:
            if b.contains(value):
                return b.label
        return None

    # -- the reference document ---------------------------------------------------------------
    def reference_markdown(self) -> str:
        r = self.reference
        lines = [
            f"# {self.name}",
            "",
            f"URL: {self.url}",
            f"Domain: {self.domain.value}",
            f"Also known as: {', '.join(self.aliases)}" if self.aliases else "",
            "",
            "## Purpose",
            r.purpose,
            "",
            "## When to use",
            r.when_to_use,
            "",
            "## Inputs",
            *[f"- {i.describe()}" for i in self.inputs],
            "",
            "## Formula",
            r.formula,
            "",
            "## Output",
            f"{self.output.label}: {self.output.type}"
            + (f" in {self.output.unit}" if self.output.unit else "")
            + (f", rounded to {self.output.decimals} decimals" if self.output.decimals is not None else ""),
            "",
            "## Interpretation",
            *[_band_line(b, self.output.unit) for b in self.bands],
            r.interpretation,
            "",
        ]
        if r.notes:
            lines += ["## Notes", r.notes, ""]
        lines += ["## Reference", r.citation + (f" {r.url}" if r.url else "")]
        return "\n".join(x for x in lines if x is not None).strip() + "\n"


def _band_line(b: Band, unit: str | None) -> str:
    if b.match is not None:
        return f"- {b.match}: {b.label}"
    u = f" {unit}" if unit else ""
    if b.lo is None:
        return f"- < {b.hi:g}{u}: {b.label}"
    if b.hi is None:
        return f"- ≥ {b.lo:g}{u}: {b.label}"
    return f"- {b.lo:g} to < {b.hi:g}{u}: {b.label}"


def points(inputs: Mapping[str, Any], table: Mapping[str, int | float]) -> tuple[int | float, dict[str, Any]]:
    """Sum a points table of boolean criteria: ``{"chf": 1, "hypertension": 1, ...}``.

    Returns the total and the per-criterion points (for ``Result.details``).
    """
    got = {k: (p if inputs.get(k) else 0) for k, p in table.items()}
    return sum(got.values()), got
