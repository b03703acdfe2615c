"""Input definitions shared across calculators, so each common field (age, sex, creatinine, ...)
is declared once with its canonical unit, range, and the aliases benchmarks use for it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calcmate.calculators.spec import Choice, Input

SEX = Input(
    "sex", "Sex", type="choice",
    choices=(Choice("Male", "male", ("m", "man")), Choice("Female", "female", ("f", "woman"))),
    aliases=("gender", "Sex"),
)


def age(min: float = 0, max: float = 120, **kw: Any) -> Input:
    return Input("age", "Age", unit="year", min=min, max=max, aliases=("age", "Age (years)"), **kw)


WEIGHT = Input("weight", "Weight", unit="kg", min=0.2, max=500, aliases=("body weight", "weight", "Weight (kg)"))
HEIGHT = Input("height", "Height", unit="cm", min=20, max=275, aliases=("height", "Height (cm)"))
CREATININE = Input(
    "creatinine", "Serum creatinine", unit="mg/dL", analyte="creatinine", min=0.05, max=30,
    aliases=("creatinine", "Creatinine", "Pre-operative creatinine", "Scr", "serum creatinine"),
)
SODIUM = Input("sodium", "Sodium", unit="mEq/L", analyte="sodium", min=80, max=220, aliases=("Sodium", "Na", "serum sodium"))
CHLORIDE = Input("chloride", "Chloride", unit="mEq/L", analyte="chloride", min=40, max=180, aliases=("Chloride", "Cl"))
BICARBONATE = Input(
    "bicarbonate", "Bicarbonate", unit="mEq/L", analyte="bicarbonate", min=1, max=70,
    aliases=("Bicarbonate", "HCO3", "HCO₃⁻", "HCO3-", "serum bicarbonate"),
)
ALBUMIN = Input("albumin", "Albumin", unit="g/dL", min=0.5, max=7, aliases=("Albumin", "serum albumin"))
GLUCOSE = Input("glucose", "Glucose", unit="mg/dL", analyte="glucose", min=5, max=3000, aliases=("Glucose", "serum glucose", "blood glucose"))
BUN = Input("bun", "Blood urea nitrogen (BUN)", unit="mg/dL", analyte="bun", min=0.5, max=300,
            aliases=("BUN", "Blood Urea Nitrogen (BUN)", "urea nitrogen"))
HEART_RATE = Input("heart_rate", "Heart rate", unit="1/min", min=10, max=350,
                   aliases=("Heart Rate or Pulse", "heart rate", "pulse", "HR"))
SBP = Input("sbp", "Systolic blood pressure", unit="mmHg", min=20, max=320, aliases=("Systolic Blood Pressure", "SBP", "systolic BP"))
DBP = Input("dbp", "Diastolic blood pressure", unit="mmHg", min=5, max=250, aliases=("Diastolic Blood Pressure", "DBP", "diastolic BP"))
RESP_RATE = Input("resp_rate", "Respiratory rate", unit="1/min", min=0, max=100, aliases=("respiratory rate", "RR"))
TEMPERATURE = Input("temperature", "Temperature", unit="degC", min=20, max=46, aliases=("Temperature", "body temperature", "temp"))


def flag(key: str, label: str, *aliases: str, help: str = "", optional: bool = False) -> Input:
    """A yes/no criterion (absent -> error unless optional, where it defaults to False)."""
    return Input(key, label, type="bool", aliases=aliases, help=help, optional=optional, default=False if optional else None)


def optional(inp: Input, default: Any = None) -> Input:
    return replace(inp, optional=True, default=default)


AGE_ADULT = age(min=18)
AGE = age()
