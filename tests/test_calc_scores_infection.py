"""Infection scores: urea threshold in both units, temperature conversion, absent-finding defaults, SIRS edges."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_curb65_urea_threshold_in_mmol_and_mg():
    c = R.get("CURB-65 Score for Pneumonia Severity")
    base = dict(resp_rate=18, sbp=120, dbp=70, age=40)
    assert c({**base, "bun": [7.0, "mmol/L"]}).value == 0  # urea must exceed 7 mmol/L
    assert c({**base, "bun": [7.1, "mmol/L"]}).value == 1
    assert c({**base, "bun": 19.5}).value == 0 and c({**base, "bun": 19.7}).value == 1  # 7 mmol/L = 19.6 mg/dL


def test_curb65_blood_pressure_and_age_edges():
    c = R.get("curb65")
    assert c(bun=10, resp_rate=29, sbp=90, dbp=61, age=64).value == 0
    assert c(bun=10, resp_rate=30, sbp=120, dbp=60, age=65).value == 3
    with pytest.raises(CalculatorInputError) as e:
        c(bun=10, sbp=120, dbp=70, age=40)
    assert e.value.field == "resp_rate"


def test_psi_sex_adjustment_and_missing_labs_scored_normal():
    p = R.get("PSI Score: Pneumonia Severity Index for CAP")
    assert p(age=70, sex="male").value == 70
    assert p(age=70, sex="female").value == 60
    r = p(age=70, sex="male", temperature=[104, "°F"], sodium=[129, "mmol/L"], glucose=[14, "mmol/L"])
    assert r.value == 70 + 15 + 20 + 10  # 40 °C, Na < 130, glucose 252 mg/dL
    assert p(age=70, sex="male", o2_sat=89).value == 80  # SaO₂ < 90% is the hypoxemia item


def test_centor_temperature_and_age_bands():
    c = R.get("Centor Score (Modified/McIsaac) for Strep Pharyngitis")
    assert c(age=20, temperature=38.0, cough_absent=False).value == 0  # > 38 °C needed
    assert c(age=20, temperature=[100.8, "degrees fahreinheit"], cough_absent=False).value == 1
    assert c(age=14, temperature=37, cough_absent=False).value == 1
    assert c(age=45, temperature=37, cough_absent=False).value == -1
    assert c(age=20, temperature=37).value == 1  # undocumented cough is absent -> point


def test_feverpain_absence_of_cough_defaults_to_scoring():
    f = R.get("feverpain")
    assert f(purulence=True).value == 2
    assert f(purulence=True, no_cough_coryza=False).value == 1
    assert "absent" in f.input("no_cough_coryza").help


def test_sirs_edges_and_optional_items():
    s = R.get("SIRS Criteria")
    normal = dict(temperature=37, heart_rate=90, resp_rate=20, wbc=8)
    assert s(normal).value == 0
    assert s({**normal, "temperature": 38.1}).value == 1 and s({**normal, "temperature": 35.9}).value == 1
    assert s({**normal, "paco2": 31}).value == 1 and s({**normal, "paco2": 32}).value == 0
    assert s({**normal, "bands": 11}).value == 1
    assert s({**normal, "wbc": [12500, "µL"]}).value == 1 and s({**normal, "wbc": [3900, "mm^3"]}).value == 1


def test_sirs_requires_measured_vitals():
    with pytest.raises(CalculatorInputError) as e:
        R.get("sirs_criteria")(temperature=37, heart_rate=80, resp_rate=12)
    assert e.value.field == "wbc"
