"""Severity scores: GCS choice vocabulary and NT, Child-Pugh boundaries and units, Charlson grades, GBS edges."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_gcs_counts_each_component_once():
    g = R.get("Glasgow Coma Scale (GCS)")
    assert g(eye="eye opening to verbal command", verbal="confused", motor="localizes pain").value == 12
    assert g(eye=4, verbal=5, motor=6).value == 15
    assert g.interpret(8).startswith("Severe") and g.interpret(13).startswith("Mild")


def test_gcs_not_testable_and_unknown_response_name_the_field():
    g = R.get("gcs")
    with pytest.raises(CalculatorInputError) as e:
        g(eye="not testable", verbal="oriented", motor="obeys commands")
    assert e.value.field == "eye"
    with pytest.raises(CalculatorInputError) as e:
        g(eye="spontaneous", verbal="mumbling", motor="obeys commands")
    assert e.value.field == "verbal"


@pytest.mark.parametrize("bili,albumin,inr,expected", [
    (1.99, 3.6, 1.69, 5),
    (2.0, 3.5, 1.7, 8),   # lower edges of the middle rows
    (3.0, 2.8, 2.3, 8),   # upper edges of the middle rows
    (3.01, 2.79, 2.31, 11),
])
def test_child_pugh_boundaries(bili, albumin, inr, expected):
    assert R.get("child_pugh")(bilirubin=bili, albumin=albumin, inr=inr).value == expected


def test_child_pugh_umol_bilirubin_and_class():
    c = R.get("Child-Pugh Score")
    r = c(bilirubin=[60, "µmol/L"], albumin=[30, "g/L"], inr=1.5, ascites="moderate", encephalopathy="Grade 3-4")
    assert r.details["bilirubin"] == 3 and r.details["albumin"] == 2
    assert r.value == 12 and r.details["class"] == "C"
    with pytest.raises(CalculatorInputError) as e:
        c(bilirubin=1, albumin=3, inr=1, ascites="lots")
    assert e.value.field == "ascites"


def test_charlson_graded_items():
    c = R.get("Charlson Comorbidity Index (CCI)")
    assert c(age=40, diabetes="None or Diet-controlled").value == 0
    assert c(age=40, diabetes="Uncomplicated").value == 1
    assert c(age=40, diabetes="End-organ damage").value == 2
    assert c(age=40, liver="Moderate to Severe").value == 3
    assert c(age=40, solid_tumor=True).value == 2 and c(age=40, solid_tumor=False).value == 0
    assert c(age=40, cva=True, tia=True).value == 1
    assert [c(age=a).value for a in (49, 50, 60, 70, 80)] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("sex,hb,pts", [("male", 13.0, 0), ("male", 12.9, 1), ("male", 11.9, 3), ("male", 9.9, 6),
                                        ("female", 12.0, 0), ("female", 11.9, 1), ("female", 9.9, 6)])
def test_blatchford_hemoglobin_by_sex(sex, hb, pts):
    r = R.get("glasgow_blatchford")(bun=10, hemoglobin=hb, sex=sex, sbp=120, heart_rate=80)
    assert r.details["hemoglobin"] == pts


def test_blatchford_urea_units_and_sbp_edges():
    g = R.get("Glasgow-Blatchford Bleeding Score (GBS)")
    base = dict(hemoglobin=14, sex="male", heart_rate=80)
    assert g({**base, "bun": [6.4, "mmol/L"], "sbp": 110}).value == 0
    assert g({**base, "bun": [6.5, "mmol/L"], "sbp": 110}).value == 2
    assert g({**base, "bun": [25, "mmol/L"], "sbp": 110}).value == 6
    assert g({**base, "bun": 10, "sbp": 109}).value == 1 and g({**base, "bun": 10, "sbp": 89}).value == 3
