"""Body-size calculators (BMI, BSA, ideal/adjusted/target weight), weight-based maintenance fluids,
and mean arterial pressure (a bedside measurement derived the same simple way)."""

from __future__ import annotations

import math
from dataclasses import replace

from calcmate.calculators._common import DBP, HEIGHT, SBP, SEX, WEIGHT
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Example, Input, Output, Reference
from calcmate.domains import Domain

CM_PER_INCH = 2.54


def _bmi(v):
    return v["weight"] / (v["height"] / 100) ** 2


BMI = Calculator(
    id="bmi",
    name="Body Mass Index (BMI)",
    aliases=("BMI", "Body Mass Index", "Quetelet index"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=6,
    tags=("anthropometrics", "obesity", "nutrition"),
    produces=("bmi",),
    inputs=(WEIGHT, HEIGHT),
    compute=_bmi,
    output=Output("decimal", "kg/m²", 1, "BMI"),
    bands=(
        Band("Underweight (<18.5)", None, 18.5),
        Band("Normal weight (18.5-24.9)", 18.5, 25),
        Band("Overweight (25-29.9)", 25, 30),
        Band("Obesity class I (30-34.9)", 30, 35),
        Band("Obesity class II (35-39.9)", 35, 40),
        Band("Obesity class III (≥40)", 40, None),
    ),
    reference=Reference(
        purpose="Weight relative to height, to classify under- and overweight in adults.",
        when_to_use="Adults; children need age- and sex-specific percentiles instead of these bands.",
        formula="BMI = weight (kg) / height (m)².",
        citation="World Health Organization. Obesity: preventing and managing the global epidemic. "
        "WHO Technical Report Series 894. Geneva: WHO; 2000. (Quetelet/Keys AB et al. J Chronic Dis. 1972;25:329-343.)",
    ),
    examples=(
        Example({"weight": 70, "height": 175}, 22.9, "Hand-computed: 70/1.75² = 22.86 (WHO formula)", 0.05),
        Example({"weight": [154, "lb"], "height": [69, "in"]}, 22.7,
                "Hand-computed: 69.85 kg / 1.7526 m² = 22.74 (CDC adult BMI formula)", 0.05),
    ),
)


def _bsa(v):
    return math.sqrt(v["height"] * v["weight"] / 3600)


BSA = Calculator(
    id="bsa",
    name="Body Surface Area Calculator",
    aliases=("Body Surface Area", "BSA", "Mosteller BSA", "BSA (Mosteller)"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=60,
    tags=("anthropometrics", "drug dosing", "oncology"),
    produces=("bsa",),
    inputs=(WEIGHT, HEIGHT),
    compute=_bsa,
    output=Output("decimal", "m²", 2, "BSA"),
    reference=Reference(
        purpose="Body surface area for dosing (chemotherapy) and indexing (cardiac index, eGFR per 1.73 m²).",
        when_to_use="Adults and children when a BSA-based dose or index is needed.",
        formula="BSA (m²) = √(height (cm) × weight (kg) / 3600)  (Mosteller).",
        citation="Mosteller RD. Simplified calculation of body-surface area. N Engl J Med. 1987;317(17):1098.",
    ),
    examples=(
        Example({"weight": 72, "height": 170}, 1.84, "Hand-computed from Mosteller 1987: √(170*72/3600) = √3.4 = 1.844", 0.005),
        Example({"weight": 64, "height": 225}, 2.0, "Hand-computed from Mosteller 1987: √(225*64/3600) = 2.0", 0.005),
    ),
)


def ideal_body_weight(sex: str, height_cm: float) -> float:
    """Devine: 50 kg (men) / 45.5 kg (women) + 2.3 kg per inch over 5 feet."""
    return (50.0 if sex == "male" else 45.5) + 2.3 * (height_cm / CM_PER_INCH - 60)


def _ibw(v):
    return ideal_body_weight(v["sex"], v["height"])


IBW = Calculator(
    id="ideal_body_weight",
    name="Ideal Body Weight",
    aliases=("IBW", "Devine ideal body weight", "Ideal Body Weight (Devine)"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=10,
    tags=("anthropometrics", "drug dosing", "ventilation"),
    produces=("ideal_body_weight",),
    inputs=(SEX, HEIGHT),
    compute=_ibw,
    output=Output("decimal", "kg", 1, "Ideal body weight"),
    reference=Reference(
        purpose="Ideal body weight for drug dosing (e.g. aminoglycosides) and lung-protective tidal volumes.",
        when_to_use="Adults; the formula is defined for heights above 5 feet (152.4 cm).",
        formula="IBW (kg) = 50 (male) or 45.5 (female) + 2.3 × (height (in) − 60).",
        citation="Devine BJ. Gentamicin therapy. Drug Intell Clin Pharm. 1974;8:650-655.",
        notes="Below 60 inches the formula extrapolates downwards (as MedCalc-Bench does); treat with caution.",
    ),
    examples=(
        Example({"sex": "male", "height": [70, "in"]}, 73.0, "Hand-computed from Devine 1974: 50 + 2.3*10 = 73.0", 0.05),
        Example({"sex": "female", "height": [64, "in"]}, 54.7, "Hand-computed from Devine 1974: 45.5 + 2.3*4 = 54.7", 0.05),
    ),
)


def _abw(v):
    ibw = ideal_body_weight(v["sex"], v["height"])
    return ibw + 0.4 * (v["weight"] - ibw), {"ideal_body_weight": ibw}


ABW = Calculator(
    id="adjusted_body_weight",
    name="Adjusted Body Weight",
    aliases=("ABW", "AdjBW", "Adjusted body weight (obesity)", "Dosing weight"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=62,
    tags=("anthropometrics", "drug dosing", "obesity"),
    produces=("adjusted_body_weight",),
    inputs=(SEX, HEIGHT, WEIGHT),
    compute=_abw,
    output=Output("decimal", "kg", 1, "Adjusted body weight"),
    reference=Reference(
        purpose="A dosing weight between ideal and actual weight for obese patients.",
        when_to_use="Drug dosing (e.g. aminoglycosides, Cockcroft-Gault) when actual weight exceeds ideal weight.",
        formula="AdjBW = IBW + 0.4 × (actual weight − IBW), IBW by Devine (50/45.5 kg + 2.3 kg per inch over 60 in).",
        citation="Bauer LA. Applied Clinical Pharmacokinetics. 2nd ed. McGraw-Hill; 2008 (0.4 correction factor); "
        "Devine BJ. Drug Intell Clin Pharm. 1974;8:650-655.",
        notes="Applied as written even when actual weight is below ideal (as MedCalc-Bench does).",
    ),
    examples=(
        Example({"sex": "male", "height": [70, "in"], "weight": 100}, 83.8,
                "Hand-computed: IBW 73.0; 73.0 + 0.4*(100-73.0) = 83.8", 0.05),
    ),
)

BMI_INPUT = Input("bmi", "Target BMI", unit="kg/m**2", min=10, max=80,
                  aliases=("Body Mass Index (BMI)", "BMI", "target BMI", "Target body mass index"))


def _target_weight(v):
    return v["bmi"] * (v["height"] / 100) ** 2


TARGET_WEIGHT = Calculator(
    id="target_weight",
    name="Target weight",
    aliases=("Target Weight Calculator", "Target body weight", "Weight for target BMI"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=61,
    tags=("anthropometrics", "nutrition", "obesity"),
    inputs=(BMI_INPUT, HEIGHT),
    compute=_target_weight,
    output=Output("decimal", "kg", 1, "Target weight"),
    reference=Reference(
        purpose="The weight that gives a chosen BMI at the patient's height.",
        when_to_use="Setting weight goals (nutrition, bariatric planning).",
        formula="Target weight (kg) = target BMI (kg/m²) × height (m)².",
        citation="Inverse of the BMI definition: WHO Technical Report Series 894 (2000).",
    ),
    examples=(
        Example({"bmi": 23.0, "height": [1.65, "m"]}, 62.6, "Hand-computed: 23.0*1.65² = 62.62", 0.05),
    ),
)


def _maintenance_fluids(v):
    w = v["weight"]
    if w <= 10:
        rate = 4 * w
    elif w <= 20:
        rate = 40 + 2 * (w - 10)
    else:
        rate = 60 + (w - 20)
    return rate, {"ml_per_day": rate * 24}


MAINTENANCE_FLUIDS = Calculator(
    id="maintenance_fluids",
    name="Maintenance Fluids Calculations",
    aliases=("Maintenance fluids", "Holliday-Segar", "4-2-1 rule", "Maintenance IV fluid rate"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=22,
    tags=("pediatrics", "fluids", "perioperative"),
    inputs=(WEIGHT,),
    compute=_maintenance_fluids,
    output=Output("decimal", "mL/hr", 1, "Maintenance fluid rate"),
    reference=Reference(
        purpose="Hourly maintenance fluid requirement from body weight.",
        when_to_use="Children and adults without conditions altering fluid needs (renal, cardiac failure, SIADH).",
        formula="4 mL/kg/hr for the first 10 kg, + 2 mL/kg/hr for the next 10 kg, + 1 mL/kg/hr for each kg above 20 "
        "(i.e. 4w if w ≤ 10; 40 + 2(w−10) if 10 < w ≤ 20; 60 + (w−20) if w > 20).",
        citation="Holliday MA, Segar WE. The maintenance need for water in parenteral fluid therapy. "
        "Pediatrics. 1957;19(5):823-832.",
        notes="Holliday-Segar gives 100/50/20 mL/kg/day; the 4-2-1 hourly rule is its standard hourly form.",
    ),
    examples=(
        Example({"weight": 84}, 124.0, "Hand-computed 4-2-1 rule: 40 + 20 + 64 = 124 mL/hr", 0.05),
        Example({"weight": 15}, 50.0, "Hand-computed 4-2-1 rule: 40 + 2*5 = 50 mL/hr", 0.05),
        Example({"weight": 7.9}, 31.6, "Hand-computed 4-2-1 rule: 4*7.9 = 31.6 mL/hr", 0.05),
    ),
)


def _map(v):
    if v["dbp"] > v["sbp"]:
        raise CalculatorInputError("mean_arterial_pressure", "dbp", "diastolic pressure is above systolic pressure")
    return (2 * v["dbp"] + v["sbp"]) / 3


MAP = Calculator(
    id="mean_arterial_pressure",
    name="Mean Arterial Pressure (MAP)",
    aliases=("MAP", "Mean arterial pressure"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=5,
    tags=("cardiovascular", "hemodynamics", "shock"),
    produces=("map",),
    inputs=(replace(SBP, aliases=(*SBP.aliases, "Systolic BP")), replace(DBP, aliases=(*DBP.aliases, "Diastolic BP"))),
    compute=_map,
    output=Output("decimal", "mmHg", 1, "MAP"),
    bands=(Band("Below 65 mmHg: inadequate organ perfusion likely", None, 65), Band("≥65 mmHg", 65, None)),
    reference=Reference(
        purpose="Average arterial pressure over a cardiac cycle, the perfusion target in shock.",
        when_to_use="Hemodynamic assessment; sepsis targets MAP ≥ 65 mmHg.",
        formula="MAP = (2 × DBP + SBP) / 3  (= DBP + (SBP − DBP)/3).",
        citation="Sesso HD, Stampfer MJ, Rosner B, et al. Systolic and diastolic blood pressure, pulse pressure, "
        "and mean arterial pressure as predictors of cardiovascular disease risk in men. Hypertension. 2000;36(5):801-807.",
    ),
    examples=(
        Example({"sbp": 120, "dbp": 80}, 93.3, "Hand-computed: (2*80+120)/3 = 93.33", 0.05),
        Example({"sbp": [150, "mm hg"], "dbp": [96, "mm hg"]}, 114.0, "Hand-computed: (2*96+150)/3 = 114", 0.05),
    ),
)

CALCULATORS = [BMI, BSA, IBW, ABW, TARGET_WEIGHT, MAINTENANCE_FLUIDS, MAP]

BUNDLES = {
    "BMI Calculator (Body Mass Index and BSA)": ("bmi", "bsa"),
    "BMI and BSA (Mosteller)": ("bmi", "bsa"),
    "Ideal Body Weight and Adjusted Body Weight": ("ideal_body_weight", "adjusted_body_weight"),
}
