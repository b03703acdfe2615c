"""QTc formulas agree at 60/min and diverge in the documented directions."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()
IDS = ["qtc_bazett", "qtc_fridericia", "qtc_framingham", "qtc_hodges", "qtc_rautaharju"]


@pytest.mark.parametrize("cid", IDS)
def test_identity_at_60_per_minute(cid):
    assert R.get(cid)(qt=400, heart_rate=60).value == pytest.approx(400.0, abs=0.05)


def test_tachycardia_ordering():
    # at 120/min Bazett corrects most, Fridericia less: QT / RR^0.5 > QT / RR^(1/3)
    vals = {c: R.get(c)(qt=300, heart_rate=[120, "beats per minute"]).value for c in IDS}
    assert vals["qtc_bazett"] == pytest.approx(424.3, abs=0.05)
    assert vals["qtc_fridericia"] == pytest.approx(378.0, abs=0.05)
    assert vals["qtc_framingham"] == pytest.approx(377.0, abs=0.05)
    assert vals["qtc_hodges"] == pytest.approx(405.0, abs=0.05)
    assert vals["qtc_rautaharju"] == pytest.approx(400.0, abs=0.05)


def test_qt_in_seconds_and_bands():
    b = R.get("Corrected QT Interval (QTc)")
    assert b.id == "qtc_bazett"
    assert b(qt=[0.33, "s"], heart_rate=48).value == pytest.approx(295.2, abs=0.05)
    assert b.interpret(449.9).startswith("Normal") and b.interpret(500).startswith("Markedly")
    with pytest.raises(CalculatorInputError) as e:
        b(qt=330, heart_rate=0)
    assert e.value.field == "heart_rate"
