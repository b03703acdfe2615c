"""CDC 2000 infant growth percentiles: LMS tables, interpolation, units, range errors."""

from __future__ import annotations

import csv
import math
import re
from importlib import resources

import pytest

from calcmate.calculators import registry
from calcmate.calculators.growth import age_row, lms_at, lms_rows, lms_table, lms_z
from calcmate.calculators.spec import CalculatorInputError

LFA = registry().get("CDC/NCHS Infant Length for Age Percentiles (<36 months)")
HCFA = registry().get("CDC/NCHS Infant Head Circumference for Age Percentiles (<36 months)")
WFL = registry().get("CDC/NCHS Infant Weight for Length Percentiles (< 36 months)")


def test_tables_have_cdc_shape():
    for name, first, last, n in (("lenageinf", 0, 35.5, 37), ("hcageinf", 0, 36, 38), ("wtleninf", 45, 103.5, 60)):
        for sex in ("male", "female"):
            xs, params = lms_table(name)[sex]
            assert (xs[0], xs[-1], len(xs)) == (first, last, n)
            assert xs == sorted(xs) and all(m > 0 and s > 0 for _, m, s in params)


# Published CDC percentile columns (P5 / P95) from the same CDC files: the LMS values must reproduce them.
@pytest.mark.parametrize("calc,inputs,pct", [
    (LFA, {"sex": "male", "age_months": 0, "length": 45.5684091}, 5),      # lenageinf boys 0 mo P5
    (LFA, {"sex": "female", "age_months": 35.5, "length": 101.0475227}, 95),  # girls 35.5 mo P95
    (HCFA, {"sex": "male", "age_months": 0, "head_circumference": 32.14881105}, 5),  # hcageinf boys 0 mo P5
    (WFL, {"sex": "male", "length": 46.5, "weight": 3.165635227}, 95),     # wtleninf boys 46.5 cm P95
])
def test_reproduces_published_percentiles(calc, inputs, pct):
    assert calc(inputs).value == pytest.approx(pct, abs=0.05)


def test_interpolates_lms_between_rows():
    lo, hi = lms_at("lenageinf", "male", 6.5), lms_at("lenageinf", "male", 7.5)
    mid = lms_at("lenageinf", "male", 7.0)
    assert mid == pytest.approx(tuple((a + b) / 2 for a, b in zip(lo, hi)))
    # age charts read the completed-month row (CDC file convention, as MDCalc): 7.0 months is the 7.5 row
    assert LFA(sex="male", age_months=7.0, length=age_row("lenageinf", "male", 7.0)[2]).value == pytest.approx(50.0, abs=0.05)


def test_lms_z_limit_at_l_zero():
    assert lms_z(11.0, 0.0, 10.0, 0.1) == pytest.approx(math.log(1.1) / 0.1)
    assert lms_z(11.0, 1e-9, 10.0, 0.1) == pytest.approx(lms_z(11.0, 0.0, 10.0, 0.1), rel=1e-6)


def test_percentile_rises_with_measurement_and_reports_z():
    a, b = LFA(sex="female", age_months=12, length=72), LFA(sex="female", age_months=12, length=76)
    assert a.value < b.value
    assert a.details["z_score"] < 0 < b.details["z_score"] or a.details["z_score"] < b.details["z_score"]


def test_unit_conversion_inches_pounds_weeks():
    metric = WFL(sex="female", length=76.2, weight=8.16466266)
    imperial = WFL(sex="female", length="30 in", weight="18 lb")
    assert imperial.value == pytest.approx(metric.value, abs=0.05)
    weeks = HCFA(sex="male", age_months="26 weeks", head_circumference=43)
    months = HCFA(sex="male", age_months=26 * 7 / (365.25 / 12), head_circumference=43)
    assert weeks.value == pytest.approx(months.value, abs=0.2)


def test_sex_matters():
    assert LFA(sex="male", age_months=10, length=72).value < LFA(sex="female", age_months=10, length=72).value


def test_out_of_table_errors_name_the_field():
    with pytest.raises(CalculatorInputError) as e:
        WFL(sex="male", length=110, weight=18)
    assert e.value.field == "length"
    with pytest.raises(CalculatorInputError) as e:
        LFA(sex="male", age_months=40, length=95)
    assert e.value.field == "age_months"
    with pytest.raises(CalculatorInputError) as e:
        HCFA(sex="unknown", age_months=4, head_circumference=40)
    assert e.value.field == "sex"


def test_lms_rows_are_the_rows_around_x():
    xs, params = lms_table("lenageinf")["female"]
    assert lms_rows("lenageinf", "female", 7.2) == ((6.5, *params[7]), (7.5, *params[8]))  # xs[7] = 6.5
    assert lms_rows("lenageinf", "female", 6.5) == ((6.5, *params[7]),)  # a tabulated age: that row
    assert lms_rows("lenageinf", "female", 35.9) == ((35.5, *params[-1]),)  # past the end: the last row
    assert lms_rows("wtleninf", "male", 45) == ((45.0, *lms_table("wtleninf")["male"][1][0]),)
    # lms_at interpolates between exactly those rows
    (x0, *a), (x1, *b) = lms_rows("lenageinf", "female", 7.2)
    t = (7.2 - x0) / (x1 - x0)
    assert lms_at("lenageinf", "female", 7.2) == pytest.approx(tuple(p + t * (q - p) for p, q in zip(a, b)), rel=1e-15)


@pytest.mark.parametrize(("calc", "table"), [(LFA, "lenageinf"), (HCFA, "hcageinf"), (WFL, "wtleninf")])
def test_reference_serves_the_whole_lms_table_as_in_the_cdc_file(calc, table):
    """Every CDC row, both sexes, with the values spelled as in the CDC file."""
    md = calc.reference_markdown()
    text = resources.files("calcmate.calculators").joinpath("data", f"cdc_{table}.csv").read_text()
    rows = list(csv.DictReader(text.splitlines()))
    xkey = "Agemos" if "Agemos" in rows[0] else "Length"
    lines = {ln.split("|")[1].strip(): ln for ln in md.splitlines() if ln.startswith("| ") and ln[2].isdigit()}
    assert len(lines) == len(rows) // 2
    for r in rows:
        cells = [c.strip() for c in lines[f"{float(r[xkey]):g}"].strip("|").split("|")]
        got = cells[1:4] if r["Sex"] == "1" else cells[4:7]
        assert got == [r["L"], r["M"], r["S"]]
    assert "| male L | male M | male S | female L | female M | female S |" in md
    assert len(md) < 9000  # a few KB: fine for one fetch


def test_search_still_finds_the_growth_charts_by_name():
    """The LMS tables make these documents long; the search index ignores their number rows."""
    from calcmate.tools.reference import ReferenceIndex

    idx = ReferenceIndex()
    for calc in (LFA, HCFA, WFL):
        assert idx.search(calc.name, k=3)[0].url == calc.url
        hit = idx.search(calc.name, k=1)[0]
        assert not re.search(r"\d\.\d{6}", hit.snippet)  # the snippet is prose, not table rows
