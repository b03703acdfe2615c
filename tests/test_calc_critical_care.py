"""Critical-care scores: NEWS2 boundaries and scale 2, CPOT item rules, RASS choices, GCS-P input
paths, CPP/shock-index bands, and the MedMCP-Calc dev answers (tests/fixtures, MIT, SPIRAL-MED/MedMCP-Calc)."""

from pathlib import Path

import pytest

from calcmate.agent.oracle import registry_inputs
from calcmate.calculators import CalculatorInputError, registry
from calcmate.scoring.tolerance import values_match
from calcmate.tasks import read_tasks

R = registry()
DEV = read_tasks(Path(__file__).parent / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl")
NEWS2 = R.get("National Early Warning Score (NEWS) 2")
NORMAL = dict(resp_rate=16, spo2=97, oxygen="Air", sbp=125, heart_rate=72, consciousness="Alert", temperature=37.0)


@pytest.mark.parametrize("name", ["GCS-Pupils Score", "Cerebral Perfusion Pressure"])
def test_medmcp_dev_answers_reproduced(name):
    answers = [a for t in DEV for a in t.calculator_answers if a.name == name]
    assert answers
    calc = R.get(name)
    for a in answers:
        inputs = registry_inputs(calc, a)
        assert inputs is not None, [i.field for i in a.inputs]
        got = calc(inputs).value
        assert values_match(got, a.final_answer), f"{got!r} vs {a.final_answer!r}"


@pytest.mark.parametrize("field,value,pts", [
    ("resp_rate", 8, 3), ("resp_rate", 9, 1), ("resp_rate", 11, 1), ("resp_rate", 12, 0), ("resp_rate", 20, 0),
    ("resp_rate", 21, 2), ("resp_rate", 24, 2), ("resp_rate", 25, 3),
    ("spo2", 91, 3), ("spo2", 92, 2), ("spo2", 94, 1), ("spo2", 96, 0),
    ("sbp", 90, 3), ("sbp", 91, 2), ("sbp", 101, 1), ("sbp", 111, 0), ("sbp", 219, 0), ("sbp", 220, 3),
    ("heart_rate", 40, 3), ("heart_rate", 41, 1), ("heart_rate", 51, 0), ("heart_rate", 91, 1),
    ("heart_rate", 111, 2), ("heart_rate", 131, 3),
    ("temperature", 35.0, 3), ("temperature", 35.1, 1), ("temperature", 36.1, 0), ("temperature", 38.1, 1),
    ("temperature", 39.1, 2), ("temperature", "102.5 °F", 2),
    ("consciousness", "CVPU", 3),
])
def test_news2_parameter_boundaries(field, value, pts):
    r = NEWS2(NORMAL, **{field: value})
    assert r.value == pts
    assert r.details["points"][field if field != "consciousness" else "consciousness"] == pts


def test_news2_scale2_and_single_red_score():
    hyper = dict(NORMAL, hypercapnic_scale=True)
    assert NEWS2(hyper, spo2=90).value == 0  # 88-92 on air
    assert NEWS2(hyper, spo2=95, oxygen="Air").value == 0  # ≥93 on air
    assert NEWS2(hyper, spo2=95, oxygen="Oxygen").details["points"]["spo2"] == 2
    assert NEWS2(hyper, spo2=97, oxygen="Oxygen").details["points"]["spo2"] == 3
    assert NEWS2(NORMAL, spo2=97, oxygen="Oxygen").details["points"]["spo2"] == 0  # scale 1 ignores O2 for SpO2
    single = NEWS2(NORMAL, resp_rate=26)
    assert single.value == 3 and single.details["clinical_risk"] == "Low-medium"
    assert NEWS2(NORMAL, resp_rate=26, heart_rate=115, sbp=100).interpretation.startswith("High")  # 3+2+2


def test_news2_missing_oxygen_names_field():
    args = {k: v for k, v in NORMAL.items() if k != "oxygen"}
    with pytest.raises(CalculatorInputError) as e:
        NEWS2(args)
    assert e.value.field == "oxygen"


def test_cpot_needs_exactly_one_of_ventilator_or_vocalization():
    cpot = R.get("cpot")
    base = dict(facial_expression="Tense", body_movements="Restlessness/agitation", muscle_tension="Relaxed")
    with pytest.raises(CalculatorInputError):
        cpot(base)
    with pytest.raises(CalculatorInputError):
        cpot(base, ventilator="Fighting ventilator", vocalization="Crying out, sobbing")
    r = cpot(base, ventilator="Fighting ventilator")
    assert r.value == 5 and r.interpretation.startswith("Pain likely")
    assert cpot(base, body_movements=0, vocalization=0).interpretation.startswith("Pain unlikely")  # 1+0+0+0


def test_rass_choices_by_label_or_value():
    rass = R.get("rass")
    assert rass(rass_level=-4).interpretation.startswith("Deep")
    assert rass(rass_level="Combative").value == 4
    assert rass(rass_level="Alert and calm").interpretation.startswith("Alert")
    with pytest.raises(CalculatorInputError) as e:
        rass(rass_level=7)
    assert e.value.field == "rass_level"


def test_gcs_pupils_total_or_components():
    gcsp = R.get("gcs_pupils")
    assert gcsp(gcs=15, pupils=0).value == 15
    assert gcsp(gcs=9, pupils="Both pupils unreactive to light (-2)").value == 7
    assert gcsp(eye=4, verbal=5, motor=6, gcs=15, pupils=0).value == 15
    with pytest.raises(CalculatorInputError) as e:
        gcsp(eye=4, verbal=5, motor=6, gcs=12, pupils=0)
    assert e.value.field == "gcs"
    with pytest.raises(CalculatorInputError) as e:
        gcsp(eye=4, motor=6, pupils=0)
    assert e.value.field == "verbal"


def test_cpp_and_shock_index_bands():
    cpp = R.get("cerebral_perfusion_pressure")
    assert cpp(map=80, icp=20).interpretation.startswith("Target")
    assert cpp(map="12 kPa", icp=10).value == pytest.approx(80.0, abs=0.5)
    si = R.get("shock_index")
    assert si(heart_rate=100, sbp=100).interpretation.startswith("Abnormal")
    assert si(heart_rate=80, sbp=100).interpretation.startswith("Elevated")
    with pytest.raises(CalculatorInputError) as e:
        si(heart_rate=100, sbp=0)
    assert e.value.field == "sbp"
