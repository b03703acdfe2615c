"""Kidney function calculators."""

from __future__ import annotations

from calcmate.calculators._common import AGE_ADULT, CREATININE, SEX, WEIGHT
from calcmate.calculators.spec import Band, Calculator, Example, Output, Reference
from calcmate.domains import Domain


def _cockcroft_gault(v):
    crcl = (140 - v["age"]) * v["weight"] / (72 * v["creatinine"])
    if v["sex"] == "female":
        crcl *= 0.85
    return crcl


COCKCROFT_GAULT = Calculator(
    id="cockcroft_gault",
    name="Creatinine Clearance (Cockcroft-Gault Equation)",
    aliases=("Cockcroft-Gault", "CrCl", "Creatinine Clearance", "Cockcroft Gault Creatinine Clearance"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=None,
    inputs=(AGE_ADULT, SEX, WEIGHT, CREATININE),
    compute=_cockcroft_gault,
    output=Output("decimal", "mL/min", 1, "Creatinine clearance"),
    bands=(
        Band("Kidney failure range (<15 mL/min)", None, 15),
        Band("Severely reduced (15-29 mL/min)", 15, 30),
        Band("Moderately reduced (30-59 mL/min)", 30, 60),
        Band("Mildly reduced (60-89 mL/min)", 60, 90),
        Band("Normal or high (≥90 mL/min)", 90, None),
    ),
    reference=Reference(
        purpose="Estimates creatinine clearance from serum creatinine, age, weight and sex, for drug dosing.",
        when_to_use="Adults with stable renal function, typically to adjust renally cleared drug doses.",
        formula="CrCl (mL/min) = (140 − age) × weight (kg) / (72 × SCr (mg/dL)), × 0.85 if female.",
        citation="Cockcroft DW, Gault MH. Prediction of creatinine clearance from serum creatinine. Nephron. 1976;16(1):31-41.",
        notes="Uses the weight given. Which weight to use (actual, ideal, adjusted) is a clinical choice the "
        "caller makes; MedCalc-Bench's maintained implementation picks adjusted/ideal weight by BMI.",
    ),
    examples=(
        Example({"age": 40, "sex": "male", "weight": 72, "creatinine": 1.0}, 100.0,
                "Arithmetic check of the Cockcroft-Gault 1976 formula: (140-40)*72/(72*1.0)", 0.05),
    ),
)

CALCULATORS = [COCKCROFT_GAULT]
