"""Hematology calculators: score boundaries, transfusion arithmetic, and MedMCP-Calc dev answers.

Benchmark inputs are from MedMCP-Calc tasks_dev.jsonl task medmcp-calc_084 (MIT, SPIRAL-MED/MedMCP-Calc, Zhu et al.).
"""

from __future__ import annotations

import pytest

from calcmate.calculators import registry
from calcmate.calculators.spec import CalculatorInputError

R = registry()


def _yes(text: str) -> bool:
    """Benchmark yes/no values carry a parenthetical ("No (INR 2.3)"); the first word is the answer."""
    return text.split()[0].lower() == "yes"


def test_isth_dic_benchmark_answer():
    dic = R.get("ISTH Criteria for Disseminated Intravascular Coagulation (DIC)")
    # "Prolonged PT, seconds": "7.2 seconds above ULN" -> 7.2 s
    r = dic({"platelets": "24", "fibrin_marker": "Severe increase", "pt_prolongation": 7.2, "fibrinogen": "0.8 g/L"})
    assert r.value == 8 and "overt DIC" in r.interpretation


@pytest.mark.parametrize("plt,pt,fib,expected", [
    (100, 2.9, 1.0, 0), (99, 3.0, 0.99, 3), (50, 5.9, 1.0, 2), (49, 6.0, 1.0, 4),
])
def test_isth_dic_boundaries(plt, pt, fib, expected):
    dic = R.get("isth_dic")
    assert dic(platelets=plt, fibrin_marker="No increase", pt_prolongation=pt, fibrinogen=fib).value == expected


def test_isth_dic_unit_conversion():
    dic = R.get("isth_dic")
    a = dic(platelets="45000 /µL", fibrin_marker="Moderate increase", pt_prolongation=4, fibrinogen="90 mg/dL")
    assert a.value == 2 + 2 + 1 + 1


def test_plasma_dosage_benchmark_answer():
    r = R.get("Plasma Dosage")({"weight": "154 lb", "dose_ml_per_kg": "15 mL/kg", "unit_volume": "250 mL"})
    assert r.value == 4 and r.details["plasma_volume_ml"] == 1048


def test_plasma_rounds_half_up():
    r = R.get("plasma_dosage")(weight=75, dose_ml_per_kg=15, unit_volume=250)  # 1125 / 250 = 4.5
    assert r.value == 5 and r.details["units_exact"] == 4.5


def test_cryoprecipitate_benchmark_answer():
    # "Fibrinogen content of unit": "200 mg per unit" -> 200 mg
    r = R.get("Cryoprecipitate Dosing for Fibrinogen Replacement")(
        {"plasma_volume": "3400 mL", "initial_fibrinogen": "80 mg/dL", "goal_fibrinogen": "150 mg/dL", "fibrinogen_per_unit": 200})
    assert r.value == 12 and r.details["fibrinogen_needed_mg"] == 2380


def test_cryoprecipitate_fibrinogen_in_g_per_l_and_goal_below_initial():
    cryo = R.get("cryoprecipitate_dosing")
    a = cryo(plasma_volume=3000, initial_fibrinogen="1.0 g/L", goal_fibrinogen="2.0 g/L", fibrinogen_per_unit=250)
    assert a.value == 12
    assert cryo(plasma_volume=3000, initial_fibrinogen=250, goal_fibrinogen=200, fibrinogen_per_unit=250).value == 0


def test_plasmic_benchmark_answer():
    fields = {"platelets_below_30": "Yes", "hemolysis": "Yes", "active_cancer": "No", "transplant": "No",
              "mcv_below_90": "Yes (MCV 88 fL)", "inr_below_1_5": "No (INR 2.3)", "creatinine_below_2": "No (2.6 mg/dL)"}
    r = R.get("PLASMIC Score for TTP")({k: _yes(v) for k, v in fields.items()})
    assert r.value == 5 and r.interpretation.startswith("Intermediate")
    assert r.details["no_active_cancer"] == 1 and r.details["inr_below_1_5"] == 0


def test_nlr_units_and_errors():
    nlr = R.get("Neutrophil-Lymphocyte Ratio (NLR) Calculator")
    assert nlr(neutrophils="6000 cells/µL", lymphocytes="1.2 x10^9/L").value == 5.0
    with pytest.raises(CalculatorInputError) as e:
        nlr(neutrophils=5, lymphocytes=0)
    assert e.value.field == "lymphocytes"
    with pytest.raises(CalculatorInputError) as e:
        nlr(neutrophils="5 mg/dL", lymphocytes=1)
    assert e.value.field == "neutrophils"
