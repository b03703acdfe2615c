"""Kidney function calculators: creatinine clearance, eGFR (CKD-EPI 2021, MDRD) and FENa."""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import AGE_ADULT, CREATININE, SEX, SODIUM, WEIGHT
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference
from calcmate.domains import Domain


def _cockcroft_gault(v):
    crcl = (140 - v["age"]) * v["weight"] / (72 * v["creatinine"])
    if v["sex"] == "female":
        crcl *= 0.85
    return crcl


_CKD_BANDS = (
    Band("G5: kidney failure (<15)", None, 15),
    Band("G4: severely decreased (15-29)", 15, 30),
    Band("G3b: moderately to severely decreased (30-44)", 30, 45),
    Band("G3a: mildly to moderately decreased (45-59)", 45, 60),
    Band("G2: mildly decreased (60-89)", 60, 90),
    Band("G1: normal or high (≥90)", 90, None),
)

COCKCROFT_GAULT = Calculator(
    id="cockcroft_gault",
    name="Creatinine Clearance (Cockcroft-Gault Equation)",
    aliases=("Cockcroft-Gault", "CrCl", "Creatinine Clearance", "Cockcroft Gault Creatinine Clearance",
             "Cockroft-Gault Equation"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=2,
    tags=("renal", "drug dosing", "kidney function"),
    produces=("crcl",),
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
        "caller makes. MedCalc-Bench's question fixes it: adjusted body weight if BMI ≥ 25, the lower of "
        "ideal and actual weight if BMI 18.5-24.9, actual weight if BMI < 18.5 (calcmate.medcalc_bench "
        "applies that rule with the registry's BMI, ideal and adjusted body weight calculators).",
    ),
    examples=(
        Example({"age": 40, "sex": "male", "weight": 72, "creatinine": 1.0}, 100.0,
                "Arithmetic check of the Cockcroft-Gault 1976 formula: (140-40)*72/(72*1.0)", 0.05),
        Example({"age": 60, "sex": "female", "weight": 60, "creatinine": [88.4, "µmol/L"]}, 56.7,
                "Hand-computed from the 1976 formula: (140-60)*60/(72*1.0)*0.85 = 56.67 (88.4 µmol/L = 1.0 mg/dL)", 0.1),
    ),
)


def _ckd_epi_2021(v):
    female = v["sex"] == "female"
    kappa, alpha = (0.7, -0.241) if female else (0.9, -0.302)
    r = v["creatinine"] / kappa
    gfr = 142 * min(r, 1) ** alpha * max(r, 1) ** -1.200 * 0.9938 ** v["age"] * (1.012 if female else 1.0)
    return gfr, {"kappa": kappa, "alpha": alpha, "scr_over_kappa": r}


CKD_EPI = Calculator(
    id="ckd_epi_2021",
    name="CKD-EPI Equations for Glomerular Filtration Rate (GFR)",
    aliases=("CKD-EPI Equations for Glomerular Filtration Rate", "CKD-EPI", "CKD-EPI 2021",
             "2021 CKD-EPI Creatinine", "eGFR CKD-EPI"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=3,
    tags=("renal", "kidney function", "ckd staging", "drug dosing"),
    produces=("gfr",),
    inputs=(AGE_ADULT, SEX, CREATININE),
    compute=_ckd_epi_2021,
    output=Output("decimal", "mL/min/1.73m²", 1, "eGFR"),
    bands=_CKD_BANDS,
    reference=Reference(
        purpose="Estimates GFR from serum creatinine, age and sex without a race coefficient (CKD-EPI 2021 refit).",
        when_to_use="Adults with stable creatinine, for CKD staging (KDIGO G1-G5) and drug dosing.",
        formula="eGFR = 142 × min(SCr/κ, 1)^α × max(SCr/κ, 1)^−1.200 × 0.9938^age × 1.012 [if female]; "
        "κ = 0.7 (female) / 0.9 (male); α = −0.241 (female) / −0.302 (male); SCr in mg/dL.",
        citation="Inker LA, Eneanya ND, Coresh J, et al. New Creatinine- and Cystatin C-Based Equations to "
        "Estimate GFR without Race. N Engl J Med. 2021;385(19):1737-1749.",
        notes="This is the 2021 race-free creatinine equation, which MedCalc-Bench's maintained implementation "
        "uses (its question names the 2021 equation). The 2009 equation (141, race term) is not this calculator.",
    ),
    examples=(
        Example({"age": 72, "sex": "male", "creatinine": 1.6}, 45.5,
                "Hand-computed from Inker 2021: 142*(1.6/0.9)^-1.2*0.9938^72 = 45.49", 0.05),
        Example({"age": 50, "sex": "female", "creatinine": 0.6}, 109.3,
                "Hand-computed from Inker 2021: 142*(0.6/0.7)^-0.241*0.9938^50*1.012 = 109.28", 0.05),
    ),
)

BLACK_RACE = Input("black_race", "Black race", type="bool", optional=True, default=False,
                   aliases=("race", "African American", "Black"),
                   help="MDRD's race coefficient (×1.212); defaults to no when not reported.")


def _mdrd(v):
    gfr = 175 * v["creatinine"] ** -1.154 * v["age"] ** -0.203
    if v["sex"] == "female":
        gfr *= 0.742
    if v["black_race"]:
        gfr *= 1.212
    return gfr


MDRD = Calculator(
    id="mdrd",
    name="MDRD GFR Equation",
    aliases=("MDRD", "MDRD eGFR", "Modification of Diet in Renal Disease", "IDMS-traceable MDRD"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=9,
    tags=("renal", "kidney function", "ckd staging"),
    produces=("gfr",),
    inputs=(AGE_ADULT, SEX, CREATININE, BLACK_RACE),
    compute=_mdrd,
    output=Output("decimal", "mL/min/1.73m²", 1, "eGFR"),
    bands=_CKD_BANDS,
    reference=Reference(
        purpose="Estimates GFR from serum creatinine (IDMS-standardised), age, sex and race.",
        when_to_use="Adults with stable CKD; less accurate above 60 mL/min/1.73m², where CKD-EPI is preferred.",
        formula="eGFR = 175 × SCr^−1.154 × age^−0.203 × 0.742 [if female] × 1.212 [if Black]; SCr in mg/dL.",
        citation="Levey AS, Coresh J, Greene T, et al. Using standardized serum creatinine values in the "
        "Modification of Diet in Renal Disease study equation for estimating glomerular filtration rate. "
        "Ann Intern Med. 2006;145(4):247-254.",
        notes="Race defaults to not Black when unreported (as MedCalc-Bench does); say so when reporting.",
    ),
    examples=(
        Example({"age": 70, "sex": "female", "creatinine": 1.1}, 49.1,
                "Hand-computed from Levey 2006: 175*1.1^-1.154*70^-0.203*0.742 = 49.10", 0.05),
        Example({"age": 45, "sex": "male", "creatinine": 2.4}, 29.4,
                "Hand-computed from Levey 2006: 175*2.4^-1.154*45^-0.203 = 29.42", 0.05),
    ),
)

URINE_SODIUM = Input("urine_sodium", "Urine sodium", unit="mEq/L", analyte="sodium", min=1, max=400,
                     aliases=("Urine sodium", "UNa", "urine Na"))
URINE_CREATININE = Input("urine_creatinine", "Urine creatinine", unit="mg/dL", analyte="creatinine", min=1, max=1000,
                         aliases=("Urine creatinine", "UCr"))


def _fena(v):
    return 100 * (v["creatinine"] * v["urine_sodium"]) / (v["sodium"] * v["urine_creatinine"])


FENA = Calculator(
    id="fena",
    name="Fractional Excretion of Sodium (FENa)",
    aliases=("FENa", "Fractional excretion of sodium"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=40,
    tags=("renal", "acute kidney injury", "prerenal"),
    inputs=(replace(SODIUM, label="Serum sodium"), replace(CREATININE, label="Serum creatinine"), URINE_SODIUM, URINE_CREATININE),
    compute=_fena,
    output=Output("decimal", "%", 2, "FENa"),
    bands=(
        Band("<1%: prerenal cause likely", None, 1),
        Band("1-2%: indeterminate", 1, 2),
        Band(">2%: intrinsic renal (e.g. ATN) likely", 2, None),
    ),
    reference=Reference(
        purpose="Separates prerenal azotaemia from acute tubular necrosis in oliguric acute kidney injury.",
        when_to_use="Oliguric AKI, ideally before diuretics (diuretics raise FENa; use FEUrea then).",
        formula="FENa (%) = 100 × (SCr × UNa) / (SNa × UCr), creatinine in the same units on both sides.",
        citation="Espinel CH. The FENa test. Use in the differential diagnosis of acute renal failure. "
        "JAMA. 1976;236(6):579-581.",
        notes="Unreliable with diuretics, contrast nephropathy, CKD, and early obstruction.",
    ),
    examples=(
        Example({"sodium": 136, "creatinine": 3.1, "urine_sodium": 62, "urine_creatinine": 48}, 2.94,
                "Hand-computed from Espinel 1976: 100*(3.1*62)/(136*48) = 2.944", 0.01),
        Example({"sodium": 140, "creatinine": 2.0, "urine_sodium": 10, "urine_creatinine": 100}, 0.14,
                "Hand-computed from Espinel 1976: 100*(2*10)/(140*100) = 0.143 (prerenal range)", 0.01),
    ),
)

CALCULATORS = [COCKCROFT_GAULT, CKD_EPI, MDRD, FENA]
