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


# -- thousands separators vs decimal commas (issue 13, item 4) ----------------------------------------
from calcmate.units import AmbiguousNumberError, decimal_mark_context, detect_decimal_mark  # noqa: E402


def test_d_dimer_thousands_separator_decided_by_plausible_range():
    # 1.25 ng/mL is below any D-dimer assay's reporting limit: the comma groups thousands
    assert parse_quantity("1,250 ng/mL", field="D-dimer") == (1250.0, "ng/mL")
    # in µg/mL the thousands reading (1,250 µg/mL) is implausible: the comma is a decimal comma
    assert parse_quantity("1,250 µg/mL", field="D-dimer (FEU)") == (1.25, "µg/mL")


def test_volume_thousands_separator_decided_by_the_documents_decimal_mark():
    assert parse_quantity("4,133 mL", decimal_mark=".") == (4133.0, "mL")
    with decimal_mark_context(detect_decimal_mark("Urine output 4,133 mL; pH 7.35; Hb 10.2 g/dL")):
        assert parse_quantity("4,133 mL", field="Urine output") == (4133.0, "mL")
    with decimal_mark_context(","):
        assert parse_quantity("4,133 mL") == (4.133, "mL")


def test_decimal_comma_by_structure():
    assert parse_quantity("1,5 mg/dL") == (1.5, "mg/dL")  # one digit after the comma: never a grouping
    assert parse_quantity("0,250 mg") == (0.25, "mg")  # a grouping never starts with 0
    assert parse_quantity("1234,5 g") == (1234.5, "g")
    assert parse_quantity("1.234,5 mL") == (1234.5, "mL")  # both marks: the last is the decimal mark
    assert parse_quantity("1,234.5 mL") == (1234.5, "mL")
    assert parse_quantity("12,345,678 /L") == (12345678.0, "/L")


def test_ambiguous_values_raise_naming_the_field_and_the_fix():
    with pytest.raises(AmbiguousNumberError) as e:
        parse_quantity("4,133 mL", field="Urine output")
    msg = str(e.value)
    assert "'Urine output'" in msg and "4133 or 4.133" in msg and "without a thousands separator" in msg
    assert e.value.readings == (4133.0, 4.133)
    # both marks seen in one document: its decimal mark is unknown, so the value stays ambiguous
    assert detect_decimal_mark("Hb 7,5 g/dL and WBC 12,345,678/L") is None
    with pytest.raises(ValueError, match="groups of three"):
        parse_quantity("1,2,3 mg", field="dose")
    with pytest.raises(ValueError, match="more than one decimal point"):
        parse_quantity("1.2.3 mg")


def test_superscript_count_units_with_decimal_commas():
    v, u = parse_quantity("4,5 × 10⁹/L")
    assert (v, u) == (4.5, "× 10⁹/L") and convert(v, u, "10^9/L", "count") == pytest.approx(4.5)
    v, u = parse_quantity("150,000 /µL", decimal_mark=".")
    assert convert(v, u, "10^9/L", "count") == pytest.approx(150.0)
