"""Liver calculators: FIB-4 fibrosis index and MELD-Na (UNOS/OPTN)."""

from __future__ import annotations

import math

from calcmate.calculators._common import AGE_ADULT, CREATININE, SODIUM, flag
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference
from calcmate.domains import Domain

AST = Input("ast", "AST", unit="U/L", min=1, max=50000, aliases=("Aspartate aminotransferase", "AST", "SGOT"))
ALT = Input("alt", "ALT", unit="U/L", min=1, max=50000, aliases=("Alanine aminotransferase", "ALT", "SGPT"))
PLATELETS = Input("platelets", "Platelet count", unit="10^9/L", analyte="count", min=1, max=2000,
                  aliases=("Platelet count", "Platelets", "PLT"))


def _fib4(v):
    return v["age"] * v["ast"] / (v["platelets"] * math.sqrt(v["alt"]))


FIB4 = Calculator(
    id="fib4",
    name="Fibrosis-4 (FIB-4) Index for Liver Fibrosis",
    aliases=("FIB-4", "FIB-4 Index", "Fibrosis-4 Index"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=19,
    tags=("hepatology", "liver fibrosis", "nafld", "hepatitis c"),
    inputs=(AGE_ADULT, AST, ALT, PLATELETS),
    compute=_fib4,
    output=Output("decimal", None, 2, "FIB-4"),
    bands=(Band("<1.45: advanced fibrosis unlikely", None, 1.45),
           Band("1.45-3.25: indeterminate", 1.45, 3.25),
           Band(">3.25: advanced fibrosis likely", 3.25, None)),
    reference=Reference(
        purpose="Non-invasive estimate of liver fibrosis from age, transaminases and platelets.",
        when_to_use="Chronic liver disease (HCV/HIV coinfection, NAFLD) to triage for elastography or biopsy.",
        formula="FIB-4 = age (years) × AST (U/L) / (platelets (10⁹/L) × √ALT (U/L)).",
        citation="Sterling RK, Lissen E, Clumeck N, et al. Development of a simple noninvasive index to predict "
        "significant fibrosis in patients with HIV/HCV coinfection. Hepatology. 2006;43(6):1317-1325.",
        notes="Less reliable under 35 or over 65 years (NAFLD cut-off ≥ 2.0 suggested over 65). Platelets below "
        "1 × 10⁹/L are rejected as implausible (usually a unit slip, e.g. a count per L entered as per µL).",
    ),
    examples=(
        Example({"age": 58, "ast": 88, "alt": 64, "platelets": [142000, "µL"]}, 4.49,
                "Hand-computed from Sterling 2006: 58*88/(142*√64) = 4.493", 0.005),
        Example({"age": 50, "ast": 40, "alt": 25, "platelets": 200}, 2.0,
                "Hand-computed from Sterling 2006: 50*40/(200*5) = 2.0", 0.005),
    ),
)

BILIRUBIN = Input("bilirubin", "Total bilirubin", unit="mg/dL", analyte="bilirubin", min=0.05, max=80,
                  aliases=("Bilirubin", "Total bilirubin", "bili"))
INR = Input("inr", "INR", min=0.5, max=20, aliases=("international normalized ratio", "INR"))
DIALYSIS_2X = flag("dialysis_twice", "Dialysis at least twice in the past week",
                   "Dialysis at least twice in the past week", "dialysis", optional=True,
                   help="sets creatinine to 4.0 mg/dL; default no")
CVVHD = flag("cvvhd", "CVVHD for ≥24 hours in the past week",
             "Continuous veno-venous hemodialysis for ≥24 hours in the past week", "CVVHD", optional=True,
             help="sets creatinine to 4.0 mg/dL; default no")


def _meld_na(v):
    cr = 4.0 if (v["dialysis_twice"] or v["cvvhd"]) else min(max(v["creatinine"], 1.0), 4.0)
    bili = max(v["bilirubin"], 1.0)
    inr = max(v["inr"], 1.0)
    na = min(max(v["sodium"], 125.0), 137.0)
    meld_i = 0.957 * math.log(cr) + 0.378 * math.log(bili) + 1.120 * math.log(inr) + 0.643
    meld = round(meld_i, 1) * 10
    score = meld + 1.32 * (137 - na) - 0.033 * meld * (137 - na) if meld > 11 else meld
    score = min(score, 40.0)
    return score, {"creatinine_used": cr, "bilirubin_used": bili, "inr_used": inr, "sodium_used": na, "meld": meld}


MELD_NA = Calculator(
    id="meld_na",
    name="MELD Na (UNOS/OPTN)",
    aliases=("MELDNa/MELD-Na Score for Liver Cirrhosis", "MELD-Na", "MELDNa", "MELD Sodium"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=23,
    tags=("hepatology", "cirrhosis", "transplant"),
    inputs=(CREATININE, BILIRUBIN, INR, SODIUM, DIALYSIS_2X, CVVHD),
    compute=_meld_na,
    output=Output("integer", None, None, "MELD-Na"),
    bands=(Band("<10: ~2% 90-day mortality", None, 10), Band("10-19: ~6% 90-day mortality", 10, 20),
           Band("20-29: ~20% 90-day mortality", 20, 30), Band("30-39: ~53% 90-day mortality", 30, 40),
           Band("≥40: ~71% 90-day mortality", 40, None)),
    reference=Reference(
        purpose="Short-term mortality in end-stage liver disease; the 2016-2023 UNOS/OPTN liver allocation score.",
        when_to_use="Cirrhosis, adults ≥ 12 years, for prognosis and transplant listing (MELD 3.0 replaced it for "
        "allocation in 2023).",
        formula="Bounds: creatinine, bilirubin and INR < 1.0 are set to 1.0; creatinine > 4.0, or dialysis ≥ 2 times "
        "or CVVHD ≥ 24 h in the past week, sets creatinine to 4.0; sodium bounded to 125-137 mEq/L.\n"
        "MELD(i) = 0.957 × ln(Cr) + 0.378 × ln(bilirubin) + 1.120 × ln(INR) + 0.643; MELD = round(MELD(i), 1) × 10.\n"
        "If MELD > 11: MELD-Na = MELD + 1.32 × (137 − Na) − 0.033 × MELD × (137 − Na). Capped at 40, reported as an integer.",
        citation="Kim WR, Biggins SW, Kremers WK, et al. Hyponatremia and mortality among patients on the "
        "liver-transplant waiting list. N Engl J Med. 2008;359(10):1018-1026; OPTN/UNOS MELD-Na policy (2016).",
        notes="MedCalc-Bench v1.0 labels used MELD(i) (not ×10) in the 0.033 term; the maintained implementation "
        "and this calculator follow OPTN. Not MELD 3.0 (2023).",
    ),
    examples=(
        Example({"creatinine": 1.9, "bilirubin": 2.1, "inr": 1.6, "sodium": 131, "dialysis_twice": True}, 30,
                "Hand-computed per OPTN: dialysis → Cr 4.0; MELD(i) 2.777 → 2.8 × 10 = 28; "
                "28 + 1.32×6 − 0.033×28×6 = 30.38 → 30"),
        Example({"creatinine": 2.3, "bilirubin": 3.2, "inr": 1.8, "sodium": 128}, 29,
                "Hand-computed per OPTN: MELD(i) 2.538 → 2.5 × 10 = 25; 25 + 1.32×9 − 0.033×25×9 = 29.46 → 29"),
        Example({"creatinine": 1.0, "bilirubin": 1.0, "inr": 1.0, "sodium": 140}, 6,
                "Hand-computed per OPTN: all at floor; MELD(i) 0.643 → 6 (≤ 11, no sodium term)"),
    ),
)

CALCULATORS = [FIB4, MELD_NA]
