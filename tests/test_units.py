import pytest

from calcmate.units import UnitError, convert, parse_quantity


@pytest.mark.parametrize(
    "value,src,dst,analyte,expected",
    [
        (1.0, "mg/dL", "µmol/L", "creatinine", 88.4),
        (88.4, "µmol/L", "mg/dL", "creatinine", 1.0),
        (180.0, "mg/dL", "mmol/L", "glucose", 9.99),
        (10.0, "mmol/L", "mg/dL", "glucose", 180.2),
        (14.0, "mg/dL", "mmol/L", "bun", 5.0),
        (220.0, "lb", "kg", None, 99.79),
        (70.0, "in", "cm", None, 177.8),
        (98.6, "°F", "°C", None, 37.0),
        (100.1, "degrees fahreinheit", "degC", None, 37.83),
        (2.5, "mmol/L", "mg/dL", "calcium", 10.02),
        (5.0, "mEq/L", "mg/dL", "calcium", 10.02),
        (119000000.0, "L", "10^9/L", "count", 0.119),
        (8000.0, "m^3", "10^9/L", "count", 8.0),
        (150000.0, "µL", "10^9/L", "count", 150.0),
        (40.0, "g/L", "g/dL", None, 4.0),
        (150.0, "10³/mm³", "10^9/L", "count", 150.0),  # superscripts survive Unicode normalisation
        (150.0, "×10⁹/L", "10^9/L", "count", 150.0),
        (1.0, "mg/dL", "µmol/L", "creatinine", 88.4),
        (1.0, "mg/dL", "μmol/L", "creatinine", 88.4),  # Greek mu as well as the micro sign
    ],
)
def test_convert(value, src, dst, analyte, expected):
    assert convert(value, src, dst, analyte) == pytest.approx(expected, rel=2e-3)


def test_mass_to_molar_needs_analyte():
    with pytest.raises(UnitError, match="analyte"):
        convert(1.0, "mg/dL", "mmol/L")


def test_unknown_unit():
    with pytest.raises(UnitError, match="unknown unit"):
        convert(1.0, "blorps", "kg")


def test_parse_quantity():
    assert parse_quantity("130 mEq/L") == (130.0, "mEq/L")
    assert parse_quantity("42") == (42.0, None)
    assert parse_quantity("-2.5 kg") == (-2.5, "kg")
    with pytest.raises(ValueError):
        parse_quantity("high")
