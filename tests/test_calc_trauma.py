"""ISS and TRISS: top-three regions, AIS 6 rule, RTS coding edges, paediatric coefficients."""

from __future__ import annotations

import math

import pytest

from calcmate.calculators import registry
from calcmate.calculators.spec import CalculatorInputError

R = registry()
ISS = R.get("Injury Severity Score (ISS)")
TRISS = R.get("Trauma Score and Injury Severity Score (TRISS)")
ZERO = {i.key: 0 for i in ISS.inputs}


def test_iss_uses_three_worst_regions_only():
    assert ISS({**ZERO, "head_neck": 3, "face": 3, "chest": 3, "abdomen": 3}).value == 27
    assert ISS({**ZERO, "extremities": 5, "external": 6}).value == 75
    with pytest.raises(CalculatorInputError) as e:
        ISS({**ZERO, "chest": 7})
    assert e.value.field == "chest"


def test_rts_coding_edges():
    base = {"age": 30, "mechanism": "blunt", "iss": 10}
    assert TRISS({**base, "gcs": 13, "sbp": 90, "resp_rate": 10}).details["rts"] == pytest.approx(7.8408)
    d = TRISS({**base, "gcs": 12, "sbp": 89, "resp_rate": 30}).details
    assert (d["gcs_code"], d["sbp_code"], d["rr_code"]) == (3, 3, 3)
    d = TRISS({**base, "gcs": 3, "sbp": 49, "resp_rate": 5}).details
    assert (d["gcs_code"], d["sbp_code"], d["rr_code"]) == (0, 1, 1)


def test_children_use_blunt_coefficients_and_age_index():
    kid = TRISS(age=10, mechanism="penetrating", gcs=15, sbp=110, resp_rate=20, iss=16)
    assert kid.details["coefficients"] == "blunt"
    b = -0.4499 + 0.8085 * 7.8408 - 0.0835 * 16
    assert kid.value == pytest.approx(100 / (1 + math.exp(-b)), abs=0.05)
    old = TRISS(age=55, mechanism="blunt", gcs=15, sbp=110, resp_rate=20, iss=16)
    assert old.details["age_index"] == 1 and old.value < kid.value


def test_triss_accepts_the_lowest_rts_blood_pressure_codes():
    """RTS codes SBP 1–49 as 1 and 0 (no pressure) as 0; the shared SBP range (≥ 20) must not reject them."""
    base = dict(age=30, mechanism="blunt", gcs=3, resp_rate=0, iss=25)
    assert TRISS({**base, "sbp": 0}).details["sbp_code"] == 0
    assert TRISS({**base, "sbp": 15}).details["sbp_code"] == 1
    assert TRISS({**base, "sbp": 0}).details["rts"] == pytest.approx(0.0)
