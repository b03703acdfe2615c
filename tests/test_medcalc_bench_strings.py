"""MedCalc-Bench entity strings the registry used to refuse (issue 13, item 5), on rows shaped like the
dev sample's with one entity changed; and the CDC infant charts' completed-month rows."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from calcmate.calculators import CalculatorInputError, registry
from calcmate.calculators.growth import age_row, lms_z
from calcmate.medcalc_bench import RegistrySolver, read_csv, score


@pytest.fixture(scope="module")
def rows():
    from pathlib import Path

    return read_csv(Path(__file__).parent / "fixtures" / "medcalc_bench" / "dev_relabelled.csv")


def _row(rows, cid: int, **entities):
    r = next(r for r in rows if r.calculator_id == cid)
    ent = {**r.entities, **entities}
    ent = {k: v for k, v in ent.items() if v is not _DROP}
    return replace(r, entities_text=repr(ent))


_DROP = object()
SOLVER = RegistrySolver()


def _solve(row):
    ans = SOLVER.solve(row)
    assert ans.solved, ans.reason
    return ans


def test_mdrd_race_black_and_white(rows):
    base = _solve(_row(rows, 9)).value
    black = _solve(_row(rows, 9, Race="Black"))
    white = _solve(_row(rows, 9, Race="White"))
    assert black.value == pytest.approx(base * 1.212, abs=0.1)
    assert white.value == pytest.approx(base, abs=1e-9)
    assert any("Black race yes" in n for n in black.notes) and any("Black race no" in n for n in white.notes)


def test_black_is_the_race_inputs_own_name():
    mdrd = registry().get("mdrd")
    assert mdrd({"age": 50, "sex": "male", "creatinine": 1.0, "black_race": "Black"}).inputs["black_race"] is True


def test_child_pugh_encephalopathy_grade_0_is_none(rows):
    none = _solve(_row(rows, 15, Encephalopathy="No Encephalopathy")).value
    assert _solve(_row(rows, 15, Encephalopathy="Grade 0")).value == none


def test_charlson_ckd_severity_words(rows):
    key = "Moderate to severe Chronic Kidney Disease"
    yes = _solve(_row(rows, 32, **{key: True})).value
    no = _solve(_row(rows, 32, **{key: False})).value
    assert yes == no + 2  # Charlson: moderate-severe renal disease 2 points
    assert _solve(_row(rows, 32, **{key: "Severe"})).value == yes
    assert _solve(_row(rows, 32, **{key: "Moderate"})).value == yes
    assert _solve(_row(rows, 32, **{key: "Mild"})).value == no  # mild CKD is not scored by Charlson


def test_not_mentinoed_is_not_reported(rows):
    key = "Moderate to severe Chronic Kidney Disease"
    no = _solve(_row(rows, 32, **{key: False})).value
    ans = _solve(_row(rows, 32, **{key: "Not mentinoed"}))  # the data's own typo
    assert ans.value == no and any("not reported" in n for n in ans.notes)
    # a required measured value that is 'Not mentioned' is missing, with the reason
    ans = SOLVER.solve(_row(rows, 9, creatinine="Not mentioned"))
    assert not ans.solved and "creatinine" in ans.reason and "missing" in ans.reason


def test_apache_ii_organ_insufficiency_without_admission_type_is_nonoperative(rows):
    r = next(r for r in rows if r.row_id == "871")  # elective postoperative: 2 chronic-health points
    elective = _solve(r)
    assert elective.details["chronic_health"] == 2
    missing = _solve(replace(r, entities_text=repr({k: v for k, v in r.entities.items() if k != "Surgery Type"})))
    assert missing.details["chronic_health"] == 5  # Knaus 1985: 2 only for elective postoperative patients
    assert missing.value == elective.value + 3 and "Nonoperative" in missing.details["admission_assumed"]
    nonop = _solve(replace(r, entities_text=repr({**r.entities, "Surgery Type": "Nonoperative "})))
    assert nonop.value == missing.value and "admission_assumed" not in nonop.details


def test_ages_in_parts_and_below_the_minimum(rows):
    # MedCalc-Bench writes some ages in parts: 1 year 6 months = 1.5 years
    cp = registry().get("charlson")
    assert cp({"age": [1, "years", 6, "months"]}).inputs["age"] == pytest.approx(1.5)
    r = _row(rows, 9, age=[16, "years"])
    ans = SOLVER.solve(r)  # MDRD was derived in adults: refused, with the reason
    assert not ans.solved and "below the minimum age 18" in ans.reason and "not computed" in ans.reason
    with pytest.raises(CalculatorInputError, match="minimum age 3"):
        registry().get("centor_mcisaac")({"age": [30, "months"], "temperature": 38.5, "exudate": True,
                                          "lymph_nodes": True, "cough_absent": True})


def test_ambiguous_numeral_in_an_input_names_the_field():
    mdrd = registry().get("mdrd")
    with pytest.raises(CalculatorInputError) as e:
        mdrd({"age": "1,250", "sex": "male", "creatinine": 1.0})  # 1250 years is impossible, 1.25 is below 18
    assert e.value.field == "age"
    # a grouped value one reading of which is out of range is read the other way
    fib4 = registry().get("fib4")
    res = fib4({"age": 50, "ast": 40, "alt": 30, "platelets": "150,000 /µL"})
    assert res.inputs["platelets"] == pytest.approx(150.0)


def test_every_dev_row_scores_as_before(rows):
    assert sum(score(r, SOLVER.solve(r)) for r in rows) >= 238


# -- CDC infant charts: the completed-month row -----------------------------------------------------
def test_cdc_age_rows_are_completed_months():
    assert age_row("lenageinf", "male", 0)[0] == 0  # birth
    assert age_row("lenageinf", "male", 0.2)[0] == 0.5  # 0 to < 1 month
    assert age_row("lenageinf", "male", 7.0)[0] == 7.5  # 7 completed months
    assert age_row("lenageinf", "male", 7.99)[0] == 7.5
    assert age_row("lenageinf", "male", 36)[0] == 35.5  # past the last row: the last row
    assert age_row("hcageinf", "female", 36)[0] == 36


def test_cdc_percentile_uses_the_completed_month_row_without_interpolation():
    lfa = registry().get("cdc_infant_length_for_age")
    _, l, m, s = age_row("lenageinf", "male", 7.0)
    for age in (7.0, 7.4, 7.9):
        res = lfa(sex="male", age_months=age, length=m)
        assert res.value == pytest.approx(50.0, abs=0.05) and res.details["cdc_row_agemos"] == 7.5
    z = lms_z(70.0, l, m, s)
    assert lfa(sex="male", age_months=7.2, length=70.0).value == pytest.approx(
        round(100 * 0.5 * (1 + math.erf(z / math.sqrt(2))), 1), abs=0.05)
