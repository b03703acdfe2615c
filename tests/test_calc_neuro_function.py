"""AWOL and CAM-ICU: scoring, the CAM-ICU algorithm's branches, and missing-feature errors."""

from __future__ import annotations

import pytest

from calcmate.calculators import registry
from calcmate.calculators.spec import CalculatorInputError

R = registry()
CAM = R.get("Confusion Assessment Method for the ICU (CAM-ICU)")


def test_awol_all_items_and_age_edge():
    awol = R.get("AWOL Score for Delirium")
    r = awol(age=80, world_backward_failed=True, disoriented=True, ill=True)
    assert r.value == 4 and "64%" in r.interpretation
    assert awol(age=79.9, world_backward_failed=False, disoriented=True, ill=False).value == 1


@pytest.mark.parametrize("inputs,expected", [
    ({"acute_change": True, "inattention": True, "altered_loc": False, "disorganized_thinking": True}, "Positive"),
    ({"acute_change": True, "inattention": False, "rass": 2}, "Negative"),
    ({"acute_change": True, "inattention": True, "rass": 1}, "Positive"),
    ({"acute_change": True, "inattention": True, "rass": -4}, "Unable to assess"),
    ({"acute_change": True, "inattention": True, "rass": -3, "altered_loc": True}, "Positive"),
])
def test_cam_icu_algorithm(inputs, expected):
    assert CAM(inputs).value == expected


def test_cam_icu_asks_for_the_feature_it_needs():
    with pytest.raises(CalculatorInputError) as e:
        CAM(acute_change=True, inattention=True)
    assert e.value.field == "altered_loc"
    with pytest.raises(CalculatorInputError) as e:
        CAM(acute_change=True, inattention=True, rass=0)
    assert e.value.field == "disorganized_thinking"
