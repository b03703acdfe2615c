"""EA evidence for inputs stored in a different form than the ground truth states them: reference
ranges ("140-220" holds an upper limit of 220) and age criteria met by a returned age."""

from __future__ import annotations

import pytest

from calcmate.agent.trajectory import ToolCallRecord, Trajectory
from calcmate.scoring.metrics import SqlEvidence


def evidence(*results: str) -> SqlEvidence:
    calls = [ToolCallRecord(id=str(i), server="postgres", tool="run_sql", arguments={"query": "q"}, result=r)
             for i, r in enumerate(results)]
    return SqlEvidence(Trajectory(task_id="t", policy="test", tool_calls=calls))


ADULT = evidence("gender | birth_date | ethnicity | patient_age | patient_age_unit\nFemale | 1958-03-02 | White | 67 | years\n(1 row)")
TODDLER = evidence("patient_age | patient_age_unit\n30 | months\n(1 row)")


def test_a_reference_range_shows_both_limits():
    ev = evidence("test_item_name | test_result | unit | reference_range\nLDH | 180 | U/L | 140-220\n(1 row)")
    assert ev.contains("220 U/L", "Upper limit of normal serum LDH") and ev.contains("140 U/L")
    assert not ev.contains("-220")


@pytest.mark.parametrize("field, value, ok", [
    ("Age", "65-74", True), ("Age", "65-74 years", True), ("Age", "75-84", False), ("Age", "55–64", False),
    ("Age range", "Adult", True), ("Age", "Elderly", True), ("Age category", "Child", False),
    ("Age ≥ 75 years", "No(67 yeas)", True), ("Age ≥ 75 years", "Yes", False), ("Age >65", "Yes", True),
    ("Age >74 years", "No", True), ("Age", "≥65", True), ("Age", "<18", False),
])
def test_age_criteria_are_met_by_the_returned_age(field, value, ok):
    assert ADULT.contains(value, field) is ok


def test_age_in_months_is_converted_and_only_age_fields_use_it():
    assert TODDLER.contains("2 to 3 years", "Age category") and not TODDLER.contains("3 to 4 years", "Age category")
    assert not TODDLER.contains("Infant", "Age") and TODDLER.contains("Toddler", "Age")
    assert not TODDLER.contains("2 to 3 years", "Gestational age")  # not a patient age criterion
    assert not TODDLER.contains("2 to 3 years", "Duration of symptoms")


def test_an_age_needs_an_age_column():
    ev = evidence("test_item_name | test_result\nPotassium | 67\n(1 row)")
    assert not ev.contains("65-74", "Age") and not ev.contains("Adult", "Age range")
