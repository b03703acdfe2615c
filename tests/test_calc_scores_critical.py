"""ICU scores: APACHE II normal defaults, oxygenation branch, ARF doubling; SOFA support cap, renal, pressors."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_apache_missing_physiology_scores_normal():
    a = R.get("APACHE II Score")
    r = a(age=50)
    assert r.value == 2 and r.details["acute_physiology_score"] == 0


def test_apache_oxygenation_branch_and_fio2_fraction():
    a = R.get("apache_ii")
    # FiO2 < 0.5 uses PaO2; 60% and 0.6 are the same FiO2 and switch to the A-a gradient
    assert a(age=30, fio2=40, pao2=58).details["oxygenation"] == 3
    assert a(age=30, fio2=60, aa_gradient=360).details["oxygenation"] == 3
    assert a(age=30, fio2=0.6, aa_gradient=360).details["oxygenation"] == 3
    # A-a computed at sea level from PaO2/PaCO2 when not given: 0.8·713 − 40/0.8 − 80 = 440.4
    r = a(age=30, fio2=80, pao2=80, paco2=40)
    assert r.details["aa_gradient"] == pytest.approx(440.4) and r.details["oxygenation"] == 3


def test_apache_creatinine_doubled_for_acute_renal_failure_only():
    a = R.get("apache_ii")
    assert a(age=30, creatinine=2.5).details["creatinine"] == 3
    assert a(age=30, creatinine=2.5, acute_renal_failure=True).details["creatinine"] == 6
    assert a(age=30, creatinine=2.5, chronic_renal_failure=True).details["creatinine"] == 3


def test_apache_gcs_term_and_misspelled_celsius():
    a = R.get("apache_ii")
    assert a(age=30, gcs=8).details["gcs"] == 7
    assert a(age=30, temperature=[37.2, "degrees celsisus"]).details["temperature"] == 0
    assert a(age=30, temperature=[96.0, "degrees fahrenheit"]).details["temperature"] == 1  # 35.6 °C


def test_apache_chronic_health_admission_type():
    a = R.get("apache_ii")
    assert a(age=30, organ_insufficiency=True, admission="Nonoperative ").value == 5
    assert a(age=30, organ_insufficiency=True, admission="Elective").value == 2
    # no admission type: Knaus 1985 gives 2 points only to elective postoperative patients, so 5
    assert a(age=30, organ_insufficiency=True).value == 5


BASE_SOFA = dict(pao2=95, fio2=21, platelets=200, gcs=15, bilirubin=0.8, creatinine=0.9)


def test_sofa_all_normal_is_zero():
    assert R.get("Sequential Organ Failure Assessment (SOFA) Score")(BASE_SOFA).value == 0


def test_sofa_respiratory_needs_support_for_3_and_4():
    s = R.get("sofa")
    low = {**BASE_SOFA, "pao2": 55, "fio2": 80}  # P/F 69
    assert s(low).details["respiration"] == 2
    assert s({**low, "mechanical_ventilation": True}).details["respiration"] == 4
    assert s({**low, "cpap": True, "pao2": 120}).details["respiration"] == 3  # P/F 150


def test_sofa_cardiovascular_tiers_and_misspelled_unit():
    s = R.get("sofa")
    assert s({**BASE_SOFA, "hypotension": True}).details["cardiovascular"] == 1
    assert s({**BASE_SOFA, "sbp": 80, "dbp": 60}).details["cardiovascular"] == 1  # MAP 66.7
    assert s({**BASE_SOFA, "dobutamine": 2}).details["cardiovascular"] == 2
    assert s({**BASE_SOFA, "dopamine": 5}).details["cardiovascular"] == 2
    assert s({**BASE_SOFA, "dopamine": 5.1}).details["cardiovascular"] == 3
    assert s({**BASE_SOFA, "norepinephrine": [0.1, "mc/kg/min"]}).details["cardiovascular"] == 3
    assert s({**BASE_SOFA, "epinephrine": 0.11}).details["cardiovascular"] == 4


def test_sofa_renal_worse_of_creatinine_and_urine_and_required():
    s = R.get("sofa")
    assert s({**BASE_SOFA, "creatinine": [110, "µmol/L"]}).details["renal"] == 1
    assert s({**BASE_SOFA, "urine_output": 450}).details["renal"] == 3
    no_renal = {k: v for k, v in BASE_SOFA.items() if k != "creatinine"}
    assert s({**no_renal, "urine_output": 150}).details["renal"] == 4
    with pytest.raises(CalculatorInputError) as e:
        s(no_renal)
    assert e.value.field == "creatinine"


def test_sofa_platelets_in_per_microlitre():
    assert R.get("sofa")({**BASE_SOFA, "platelets": [49000, "µL"]}).details["coagulation"] == 3
