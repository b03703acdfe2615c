"""Metabolic calculators: insulin resistance (HOMA-IR) and calculated LDL cholesterol."""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import GLUCOSE
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Example, Input, Output, Reference
from calcmate.domains import Domain

INSULIN = Input("insulin", "Fasting insulin", unit="uIU/mL", min=0.1, max=1000,
                aliases=("Insulin", "fasting insulin", "serum insulin"))


def _homa_ir(v):
    return v["insulin"] * v["glucose"] / 405


HOMA_IR = Calculator(
    id="homa_ir",
    name="HOMA-IR (Homeostatic Model Assessment for Insulin Resistance)",
    aliases=("HOMA-IR", "Homeostatic Model Assessment for Insulin Resistance", "HOMA"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=31,
    tags=("endocrine", "diabetes", "insulin resistance", "metabolic syndrome"),
    inputs=(INSULIN, replace(GLUCOSE, label="Fasting glucose", aliases=(*GLUCOSE.aliases, "fasting glucose"))),
    compute=_homa_ir,
    output=Output("decimal", None, 2, "HOMA-IR"),
    bands=(Band("<1.9: insulin sensitive (approximate)", None, 1.9), Band("1.9-2.9: early insulin resistance likely", 1.9, 2.9),
           Band("≥2.9: significant insulin resistance likely", 2.9, None)),
    reference=Reference(
        purpose="Estimates insulin resistance from fasting glucose and insulin.",
        when_to_use="Research and metabolic assessment in fasting adults; cut-offs vary by population.",
        formula="HOMA-IR = fasting insulin (µIU/mL) × fasting glucose (mg/dL) / 405  (= insulin × glucose (mmol/L) / 22.5).",
        citation="Matthews DR, Hosker JP, Rudenski AS, et al. Homeostasis model assessment: insulin resistance and "
        "beta-cell function from fasting plasma glucose and insulin concentrations in man. Diabetologia. 1985;28(7):412-419.",
        notes="Bands are approximate and population-dependent; the 1985 paper defines the index, not the cut-offs.",
    ),
    examples=(
        Example({"insulin": 12.5, "glucose": 108}, 3.33, "Hand-computed from Matthews 1985: 12.5*108/405 = 3.333", 0.005),
        Example({"insulin": 10, "glucose": [5.0, "mmol/L"]}, 2.22,
                "Hand-computed from Matthews 1985: 10*5.0/22.5 = 2.22", 0.01),
    ),
)

TOTAL_CHOL = Input("total_cholesterol", "Total cholesterol", unit="mg/dL", analyte="cholesterol", min=20, max=2000,
                   aliases=("Total cholesterol", "TC", "cholesterol"))
HDL = Input("hdl", "HDL cholesterol", unit="mg/dL", analyte="cholesterol", min=2, max=300,
            aliases=("high-density lipoprotein cholesterol", "HDL", "HDL-C", "HDL cholesterol"))
TRIGLYCERIDES = Input("triglycerides", "Triglycerides", unit="mg/dL", analyte="triglycerides", min=5, max=20000,
                      aliases=("Triglycerides", "TG", "TGs"))


def _ldl(v):
    if v["triglycerides"] >= 400:
        raise CalculatorInputError("ldl_friedewald", "triglycerides",
                                   f"{v['triglycerides']:g} mg/dL: Friedewald is invalid at triglycerides ≥ 400 mg/dL")
    return v["total_cholesterol"] - v["hdl"] - v["triglycerides"] / 5


LDL = Calculator(
    id="ldl_friedewald",
    name="LDL Calculated",
    aliases=("Friedewald LDL", "Calculated LDL", "LDL cholesterol (Friedewald)", "LDL-C"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=44,
    tags=("cardiovascular", "lipids", "prevention"),
    produces=("ldl",),
    inputs=(TOTAL_CHOL, HDL, TRIGLYCERIDES),
    compute=_ldl,
    output=Output("decimal", "mg/dL", 1, "LDL cholesterol"),
    bands=(Band("Optimal (<100 mg/dL)", None, 100), Band("Near optimal (100-129 mg/dL)", 100, 130),
           Band("Borderline high (130-159 mg/dL)", 130, 160), Band("High (160-189 mg/dL)", 160, 190),
           Band("Very high (≥190 mg/dL)", 190, None)),
    reference=Reference(
        purpose="Estimates LDL cholesterol from a standard lipid panel.",
        when_to_use="Fasting lipid panel with triglycerides < 400 mg/dL.",
        formula="LDL (mg/dL) = total cholesterol − HDL − triglycerides / 5.",
        citation="Friedewald WT, Levy RI, Fredrickson DS. Estimation of the concentration of low-density lipoprotein "
        "cholesterol in plasma, without use of the preparative ultracentrifuge. Clin Chem. 1972;18(6):499-502.",
        notes="Invalid at triglycerides ≥ 400 mg/dL (an input error is raised); underestimates LDL at low LDL/high TG. "
        "Bands: NCEP ATP III (2002).",
    ),
    examples=(
        Example({"total_cholesterol": 200, "hdl": 50, "triglycerides": 150}, 120.0,
                "Hand-computed from Friedewald 1972: 200 − 50 − 30 = 120", 0.05),
        Example({"total_cholesterol": 232, "hdl": 41, "triglycerides": 185}, 154.0,
                "Hand-computed from Friedewald 1972: 232 − 41 − 185/5 = 154", 0.05),
    ),
)

CALCULATORS = [HOMA_IR, LDL]
