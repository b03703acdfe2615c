"""Sepsis: the cumulative SIRS → septic shock staging, qSOFA, SIC scoring edges and the SIC rule,
the MedMCP-Calc dev SIC answer (tests/fixtures, MIT, SPIRAL-MED/MedMCP-Calc), and the alias split
from MedCalc-Bench's plain "SIRS Criteria" count."""

from pathlib import Path

import pytest

from calcmate.agent.oracle import registry_inputs
from calcmate.calculators import CalculatorInputError, registry
from calcmate.scoring.tolerance import values_match
from calcmate.tasks import read_tasks

R = registry()
DEV = read_tasks(Path(__file__).parent / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl")
STAGE = R.get("SIRS, Sepsis, and Septic Shock Criteria")
TWO = dict(temp_abnormal=True, hr_high=True, rr_high=False, wbc_abnormal=False)


def test_medmcp_dev_sic_answer_reproduced():
    answers = [a for t in DEV for a in t.calculator_answers if a.name == "Sepsis-Induced Coagulopathy (SIC) Score"]
    assert answers
    calc = R.get("Sepsis-Induced Coagulopathy (SIC) Score")
    for a in answers:
        inputs = registry_inputs(calc, a)
        assert inputs is not None
        assert values_match(calc(inputs).value, a.final_answer)


def test_staging_is_cumulative():
    assert STAGE(TWO).value == "SIRS"
    assert STAGE(TWO, organ_dysfunction=True, refractory_hypotension=True).value == "SIRS"  # no infection
    assert STAGE(TWO, infection=True, organ_dysfunction=True).value == "Severe sepsis"
    assert STAGE(TWO, infection=True, refractory_hypotension=True).value == "Sepsis"  # shock needs severe sepsis
    assert STAGE(TWO, infection=True, mods=True).value == "Multiple organ dysfunction syndrome"
    r = STAGE(TWO, infection=True)
    assert r.details["sirs_criteria_met"] == 2 and r.interpretation.startswith("Sepsis")


def test_staging_requires_the_four_sirs_flags():
    with pytest.raises(CalculatorInputError) as e:
        STAGE(temp_abnormal=True, hr_high=True, rr_high=False)
    assert e.value.field == "wbc_abnormal"


def test_plain_sirs_count_name_is_not_claimed_here():
    found = R.find("SIRS Criteria")
    assert found is None or found.id != STAGE.id


def test_qsofa_bands():
    q = R.get("qSOFA (Quick SOFA) Score for Sepsis")
    assert q(altered_mentation=True, rr_22=True, sbp_100=True).value == 3
    assert q(altered_mentation=False, rr_22=True, sbp_100=False).interpretation.startswith("Not high risk")
    assert q(altered_mentation="yes", rr_22="no", sbp_100="yes").interpretation.startswith("High risk")


@pytest.mark.parametrize("plt,inr,sofa,pts", [
    (150, 1.2, 0, (0, 0, 0)), (149, 1.21, 1, (1, 1, 1)), (100, 1.4, 2, (1, 1, 2)), (99, 1.41, 9, (2, 2, 2)),
])
def test_sic_point_edges(plt, inr, sofa, pts):
    r = R.get("sic_score")(platelets=plt, inr=inr, sofa4=sofa)
    assert tuple(r.details["points"].values()) == pts


def test_sic_rule_needs_coagulation_points_above_two():
    sic = R.get("sic_score")
    r = sic(platelets=120, inr=1.3, sofa4=4)  # 1 + 1 + 2 = 4 but coagulation points only 2
    assert r.value == 4 and r.details["sic"] is False
    assert sic(platelets=90, inr=1.3, sofa4=2).details["sic"] is True
    assert sic(platelets="90000 /µL", inr=1.3, sofa4=2).details["points"]["platelets"] == 2
    with pytest.raises(CalculatorInputError) as e:
        sic(platelets=90, inr=1.3, sofa4=2.5)
    assert e.value.field == "sofa4"
