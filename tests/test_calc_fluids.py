"""Fluids: Adrogué-Madias TBW fractions and infusates, GIR/drip/urine-output unit paths, and the
MedMCP-Calc dev answers (tests/fixtures, MIT, SPIRAL-MED/MedMCP-Calc)."""

from pathlib import Path

import pytest

from calcmate.agent.oracle import registry_inputs
from calcmate.calculators import CalculatorInputError, registry
from calcmate.scoring.tolerance import values_match
from calcmate.tasks import read_tasks

R = registry()
NA = R.get("Sodium Correction Rate in Hyponatremia and Hypernatremia")
DEV = read_tasks(Path(__file__).parent / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl")


@pytest.mark.parametrize("name", ["Sodium Correction Rate in Hyponatremia and Hypernatremia",
                                  "Glucose Infusion Rate (GIR)", "IV Drip Rate Calculator",
                                  "Urine Output and Fluid Balance"])
def test_medmcp_dev_answers_reproduced(name):
    answers = [a for t in DEV for a in t.calculator_answers if a.name == name]
    assert answers
    calc = R.get(name)
    for a in answers:
        inputs = registry_inputs(calc, a)
        assert inputs is not None, [i.field for i in a.inputs]
        got = calc(inputs).value
        assert values_match(got, a.final_answer), f"{got!r} vs {a.final_answer!r}"


@pytest.mark.parametrize("group,sex,frac", [("child", "female", 0.6), ("adult", "male", 0.6), ("adult", "female", 0.5),
                                            ("elderly", "male", 0.5), ("elderly", "female", 0.45)])
def test_sodium_rate_tbw_fractions(group, sex, frac):
    r = NA(sex=sex, age_group=group, weight=70, sodium=120, infusate="3% saline", correction_rate=0.5)
    assert r.details["total_body_water_l"] == pytest.approx(round(frac * 70, 1))
    per_l = (513 - 120) / (frac * 70 + 1)
    assert r.value == round(0.5 / per_l * 1000)
    assert r.details["direction"] == "increase"


def test_sodium_rate_ringers_counts_potassium_and_custom_infusate():
    lr = NA(sex="male", age_group="adult", weight=70, sodium=120, infusate="Lactated Ringer's", correction_rate=0.5)
    assert lr.details["infusate_cation_mmol_l"] == 134
    custom = NA(sex="male", age_group="adult", weight=70, sodium=120, infusate_sodium=130, infusate_potassium=4,
                correction_rate=0.5)
    assert custom.value == lr.value


def test_sodium_rate_errors_name_fields():
    base = dict(sex="male", age_group="adult", weight=70, sodium=154, correction_rate=0.5)
    with pytest.raises(CalculatorInputError) as e:
        NA(base)
    assert e.value.field == "infusate"
    with pytest.raises(CalculatorInputError) as e:
        NA(base, infusate="normal saline")  # 154 in, 154 serum: no change possible
    assert e.value.field == "infusate"
    with pytest.raises(CalculatorInputError) as e:
        NA(base, infusate="D5W", age_group="teen")
    assert e.value.field == "age_group"


def test_sodium_rate_warns_when_sodium_normal():
    r = NA(sex="male", age_group="adult", weight="180 lbs", sodium=145, infusate="0.45% saline", correction_rate=0.25)
    assert "warning" in r.details and r.details["direction"] == "decrease"


def test_gir_and_drip_units():
    assert R.get("glucose_infusion_rate")(dextrose_concentration=10, infusion_rate="0.2 L/h", weight="3000 g").value == \
        pytest.approx(10 * 200 / 18, abs=0.05)
    drip = R.get("iv_drip_rate")
    assert drip(volume="1 L", drop_factor=60, time="8 hours").value == 125
    with pytest.raises(CalculatorInputError) as e:
        drip(volume=1000, drop_factor=20, time="8 kg")
    assert e.value.field == "time"


def test_urine_output_bands_and_balance():
    uo = R.get("urine_output_fluid_balance")
    low = uo(weight=70, urine_output=200, hours=12, fluid_intake=1500)
    assert low.value == 0.2 and low.interpretation.startswith("Below 0.5")
    assert low.details["fluid_balance_ml"] == 1300
    assert "fluid_balance_ml" not in uo(weight=70, urine_output=500, hours=12).details
