"""CDC 2000 infant growth-chart percentiles (birth to 36 months) by the LMS method.

The CDC publishes, per sex and per half-month of age (or per half-centimetre of length), the
Box-Cox parameters L (skew), M (median) and S (coefficient of variation). A measurement X becomes
z = ((X/M)^L - 1)/(L*S) (z = ln(X/M)/S when L = 0) and the percentile is Phi(z). The tables are
in ``data/`` (see its README for the CDC source); values between rows are interpolated linearly.
Each calculator's reference (what the reference tool's fetch serves) carries its full LMS table,
so a program computing the percentile uses only rows the agent has read.
"""

from __future__ import annotations

import bisect
import csv
import math
from functools import lru_cache
from importlib import resources
from statistics import NormalDist

from calcmate.calculators._common import SEX
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Example, Input, Output, Reference
from calcmate.domains import Domain

_NORMAL = NormalDist()
_SEX_CODE = {"male": "1", "female": "2"}


@lru_cache(maxsize=None)
def lms_table(name: str) -> dict[str, tuple[list[float], list[tuple[float, float, float]]]]:
    """{"male"|"female": (x values, [(L, M, S), ...])} from ``data/cdc_<name>.csv``."""
    text = resources.files("calcmate.calculators").joinpath("data", f"cdc_{name}.csv").read_text()
    rows = list(csv.DictReader(text.splitlines()))
    xkey = "Agemos" if "Agemos" in rows[0] else "Length"
    out: dict[str, tuple[list[float], list[tuple[float, float, float]]]] = {}
    for sex, code in _SEX_CODE.items():
        sel = sorted((float(r[xkey]), (float(r["L"]), float(r["M"]), float(r["S"]))) for r in rows if r["Sex"] == code)
        out[sex] = ([x for x, _ in sel], [p for _, p in sel])
    return out


@lru_cache(maxsize=4096)
def lms_rows(name: str, sex: str, x: float) -> tuple[tuple[float, float, float, float], ...]:
    """CDC LMS rows (x, L, M, S) for this x, as in the LMS table of the calculator's reference.

    One row when x is tabulated or outside the table (the end row), else the two rows around x.
    Cached: it stands for the table lookup (the generated run_python program embeds only these rows).
    """
    xs, params = lms_table(name)[sex]
    if x <= xs[0]:
        return ((xs[0], *params[0]),)
    if x >= xs[-1]:
        return ((xs[-1], *params[-1]),)
    i = bisect.bisect_right(xs, x)
    if xs[i - 1] == x:
        return ((xs[i - 1], *params[i - 1]),)
    return ((xs[i - 1], *params[i - 1]), (xs[i], *params[i]))


def lms_at(name: str, sex: str, x: float) -> tuple[float, float, float]:
    """L, M, S at ``x`` (age in months or length in cm), linear between tabulated rows.

    Below the first row or above the last the end row is used (callers bound x by input ranges).
    """
    rows = lms_rows(name, sex, x)
    if len(rows) == 1:
        return rows[0][1:]
    (x0, *lms0), (x1, *lms1) = rows
    t = (x - x0) / (x1 - x0)
    return tuple(a + t * (b - a) for a, b in zip(lms0, lms1))  # type: ignore[return-value]


def age_row(name: str, sex: str, age_months: float) -> tuple[float, float, float, float]:
    """The CDC row (Agemos, L, M, S) for a child of ``age_months``: the completed-month row.

    The CDC age-for files tabulate birth (Agemos 0) and then each completed month n at its mid-point
    n + 0.5 ("0.5" stands for 0 to < 1 month, "1.5" for 1 to < 2 months, ...). MDCalc's CDC infant
    calculators and the CDC file convention use that row for every age within the month; nothing is
    interpolated. Age 0 is birth; ages past the last row use the last row.
    """
    xs, params = lms_table(name)[sex]
    target = 0.0 if age_months <= 0 else math.floor(age_months) + 0.5
    i = bisect.bisect_right(xs, target) - 1
    i = max(0, min(i, len(xs) - 1))
    return (xs[i], *params[i])


def lms_markdown(name: str, x_label: str) -> str:
    """The whole LMS table of ``name`` for both sexes, as the markdown table the reference serves.

    Values are written exactly as the CDC file gives them (Python's shortest repr round-trips them).
    """
    male, female = lms_table(name)["male"], lms_table(name)["female"]
    if male[0] != female[0]:  # pragma: no cover - the CDC files share their x grid
        raise ValueError(f"cdc_{name}.csv: the male and female rows are at different {x_label}")
    lines = [
        f"| {x_label} | male L | male M | male S | female L | female M | female S |",
        "|---|---|---|---|---|---|---|",
    ]
    for x, pm, pf in zip(male[0], male[1], female[1]):
        lines.append("| " + " | ".join([f"{x:g}", *(repr(p) for p in (*pm, *pf))]) + " |")
    return "\n".join(lines)


def _lms_notes(name: str, x_label: str) -> str:
    how = ("read the row of the completed month (0 at birth, n + 0.5 for n to < n + 1 months)"
           if x_label.lower().startswith("age") else "between rows, interpolate linearly")
    return (f"### LMS table (CDC 2000, `{name}.csv`)\n\nL, M, S by sex at each tabulated {x_label.lower()}; "
            f"{how}.\n\n" + lms_markdown(name, x_label))


def lms_z(x: float, l: float, m: float, s: float) -> float:
    """Box-Cox z-score of measurement x (Cole 1990)."""
    if abs(l) < 1e-12:
        return math.log(x / m) / s
    return ((x / m) ** l - 1) / (l * s)


def _percentile(table: str, sex: str, at: float, value: float) -> tuple[float, dict]:
    """Percentile of ``value`` at length ``at`` (cm, interpolated between CDC rows)."""
    l, m, s = lms_at(table, sex, at)
    return _from_lms(value, l, m, s, {})


def _age_percentile(table: str, sex: str, age_months: float, value: float) -> tuple[float, dict]:
    """Percentile of ``value`` at ``age_months``, on the completed-month CDC row (``age_row``)."""
    row, l, m, s = age_row(table, sex, age_months)
    return _from_lms(value, l, m, s, {"cdc_row_agemos": row})


def _from_lms(value: float, l: float, m: float, s: float, extra: dict) -> tuple[float, dict]:
    z = lms_z(value, l, m, s)
    pct = 100 * _NORMAL.cdf(z)
    return pct, {"z_score": round(z, 3), "L": l, "M": m, "S": s, "median": round(m, 3), **extra}


AGE_MONTHS_INF = Input(
    "age_months", "Age", unit="month", min=0, max=36,
    aliases=("Age (months)", "Age in months", "age", "Age"),
    help="Age in months from birth (0 to 36). The CDC row of the completed month is used: birth at 0, then "
    "0.5 for 0 to < 1 month, 1.5 for 1 to < 2 months, ….",
)
LENGTH = Input(
    "length", "Recumbent length", unit="cm", min=30, max=130,
    aliases=("Length", "Length (cm)", "length", "recumbent length", "Height", "height"),
)
HEAD_CIRC = Input(
    "head_circumference", "Head circumference", unit="cm", min=20, max=65,
    aliases=("Head circumference", "Head circumference (cm)", "HC", "occipitofrontal circumference", "OFC"),
)
WEIGHT_INF = Input("weight", "Weight", unit="kg", min=0.3, max=40, aliases=("Weight", "Weight (kg)", "body weight"))

_BANDS = (
    Band("Below the 3rd percentile (evaluate for growth faltering)", None, 3),
    Band("3rd to <5th percentile", 3, 5),
    Band("5th to <95th percentile", 5, 95),
    Band("95th to <97th percentile", 95, 97),
    Band("97th percentile or above", 97, None),
)

_CITATION = (
    "Kuczmarski RJ, Ogden CL, Guo SS, et al. 2000 CDC Growth Charts for the United States: methods and "
    "development. Vital Health Stat 11. 2002;(246):1-190. LMS tables: CDC/NCHS, Percentile Data Files with "
    "LMS Values (lenageinf, hcageinf, wtleninf)."
)
_AGE_ROW = ": the row of the completed month (birth row at age 0; row n + 0.5 for n ≤ age < n + 1 months)"
_LENGTH_INTERP = ", interpolated linearly between the tabulated lengths"
_LMS_FORMULA = (
    "z = ((X / M)^L − 1) / (L × S)  (z = ln(X/M) / S when L = 0); percentile = 100 × Φ(z).\n\n"
    "L, M, S are the CDC 2000 values for the child's sex at the given {x}{how}."
)
_NOTES = (
    "The CDC recommends the WHO standards for children under 2 years in the U.S.; these are the CDC 2000 "
    "reference charts, which remain the ones named by this calculator. CDC half-month rows (0.5, 1.5, …) are "
    "the mid-points of each completed month: a child of n completed months (n ≤ age < n + 1) is read on row "
    "n + 0.5, with no interpolation, as the CDC file convention and MDCalc do (age 0 is the birth row). "
    "The z-score and the row used are in the details."
)


def _len_for_age(v):
    return _age_percentile("lenageinf", v["sex"], v["age_months"], v["length"])


def _hc_for_age(v):
    return _age_percentile("hcageinf", v["sex"], v["age_months"], v["head_circumference"])


def _wt_for_len(v):
    return _percentile("wtleninf", v["sex"], v["length"], v["weight"])


def _check_length_range(v):
    if not 45 <= v["length"] <= 103.5:
        raise CalculatorInputError(
            "cdc_infant_weight_for_length", "length",
            f"{v['length']:g} cm is outside the CDC weight-for-length table (45 to 103.5 cm)",
        )
    return _wt_for_len(v)


CDC_LENGTH_FOR_AGE = Calculator(
    id="cdc_infant_length_for_age",
    name="CDC/NCHS Infant Length for Age Percentiles (<36 months)",
    aliases=("CDC Infant Length for Age", "Infant length-for-age percentile", "CDC length for age 0-36 months"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(SEX, AGE_MONTHS_INF, LENGTH),
    compute=_len_for_age,
    output=Output("decimal", "percentile", 1, "Length-for-age percentile"),
    bands=_BANDS,
    tags=("pediatrics", "growth", "nutrition"),
    produces=("length_for_age_percentile",),
    reference=Reference(
        purpose="Percentile and z-score of an infant's recumbent length for age and sex on the CDC 2000 charts.",
        when_to_use="Infants and toddlers from birth to 36 months measured lying down (recumbent length).",
        formula=_LMS_FORMULA.format(x="age in months", how=_AGE_ROW),
        citation=_CITATION,
        notes=_NOTES + " The length-for-age table ends at 35.5 months (the 35.0–35.99-month mid-point); "
        "ages from 35.5 to 36 months use that row.\n\n" + _lms_notes("lenageinf", "Age (months)"),
        url="https://www.cdc.gov/growthcharts/percentile_data_files.htm",
    ),
    examples=(
        Example({"sex": "male", "age_months": 0, "length": 49.98888408}, 50.0,
                "CDC lenageinf.csv, boys at birth: M = 49.98888408 cm is the median (50th percentile)", 0.05),
        Example({"sex": "female", "age_months": 6.5, "length": 61.13893122}, 3.0,
                "CDC lenageinf.csv, girls at 6.5 months: published P3 = 61.13893122 cm", 0.05),
        Example({"sex": "male", "age_months": 12.5, "length": 80.06520155}, 90.0,
                "CDC lenageinf.csv, boys at 12.5 months: published P90 = 80.06520155 cm", 0.05),
    ),
)

CDC_HC_FOR_AGE = Calculator(
    id="cdc_infant_head_circumference_for_age",
    name="CDC/NCHS Infant Head Circumference for Age Percentiles (<36 months)",
    aliases=("CDC Infant Head Circumference for Age", "Infant head circumference-for-age percentile"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(SEX, AGE_MONTHS_INF, HEAD_CIRC),
    compute=_hc_for_age,
    output=Output("decimal", "percentile", 1, "Head circumference-for-age percentile"),
    bands=_BANDS,
    tags=("pediatrics", "growth", "neurology"),
    produces=("head_circumference_percentile",),
    reference=Reference(
        purpose="Percentile and z-score of an infant's head circumference for age and sex on the CDC 2000 charts.",
        when_to_use="Infants and toddlers from birth to 36 months, screening for micro- or macrocephaly.",
        formula=_LMS_FORMULA.format(x="age in months", how=_AGE_ROW),
        citation=_CITATION,
        notes=_NOTES + "\n\n" + _lms_notes("hcageinf", "Age (months)"),
        url="https://www.cdc.gov/growthcharts/percentile_data_files.htm",
    ),
    examples=(
        Example({"sex": "male", "age_months": 0.5, "head_circumference": 37.19361054}, 50.0,
                "CDC hcageinf.csv, boys at 0.5 months: M = 37.19361054 cm is the median", 0.05),
        Example({"sex": "male", "age_months": 1.5, "head_circumference": 41.94137873}, 97.0,
                "CDC hcageinf.csv, boys at 1.5 months: published P97 = 41.94137873 cm", 0.05),
    ),
)

CDC_WEIGHT_FOR_LENGTH = Calculator(
    id="cdc_infant_weight_for_length",
    name="CDC/NCHS Infant Weight for Length Percentiles (< 36 months)",
    aliases=("CDC Infant Weight for Length", "Infant weight-for-length percentile"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(SEX, LENGTH, WEIGHT_INF),
    compute=_check_length_range,
    output=Output("decimal", "percentile", 1, "Weight-for-length percentile"),
    bands=_BANDS,
    tags=("pediatrics", "growth", "nutrition"),
    produces=("weight_for_length_percentile",),
    reference=Reference(
        purpose="Percentile and z-score of an infant's weight for recumbent length and sex on the CDC 2000 charts.",
        when_to_use="Infants and toddlers up to 36 months with recumbent length 45 to 103.5 cm.",
        formula=_LMS_FORMULA.format(x="recumbent length in cm", how=_LENGTH_INTERP),
        citation=_CITATION,
        notes="The CDC table covers lengths 45 to 103.5 cm; a length outside it is an error rather than an "
        "extrapolation. L, M, S are interpolated linearly between tabulated lengths.\n\n"
        + _lms_notes("wtleninf", "Length (cm)"),
        url="https://www.cdc.gov/growthcharts/percentile_data_files.htm",
    ),
    examples=(
        Example({"sex": "male", "length": 45, "weight": 2.289757735}, 50.0,
                "CDC wtleninf.csv, boys at 45 cm: M = 2.289757735 kg is the median", 0.05),
        Example({"sex": "male", "length": 45.5, "weight": 1.702957417}, 3.0,
                "CDC wtleninf.csv, boys at 45.5 cm: published P3 = 1.702957417 kg", 0.05),
    ),
)

CALCULATORS = [CDC_LENGTH_FOR_AGE, CDC_HC_FOR_AGE, CDC_WEIGHT_FOR_LENGTH]
