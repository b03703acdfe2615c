"""Hematology: inflammation ratio, transfusion dosing (plasma, cryoprecipitate), TTP and DIC scores."""

from __future__ import annotations

import math
from dataclasses import replace

from calcmate.calculators._common import WEIGHT, flag
from calcmate.calculators._scales import graded
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference, points
from calcmate.domains import Domain

COUNT = "10^9/L"

# -- Neutrophil-lymphocyte ratio --------------------------------------------------------------------

NLR = Calculator(
    id="neutrophil_lymphocyte_ratio",
    name="Neutrophil-Lymphocyte Ratio (NLR) Calculator",
    aliases=("Neutrophil-Lymphocyte Ratio", "NLR", "Neutrophil to lymphocyte ratio"),
    domain=Domain.MEDICINE,
    inputs=(
        Input("neutrophils", "Absolute neutrophil count", unit=COUNT, analyte="count", min=0.01, max=200,
              aliases=("Absolute neutrophil count", "ANC", "Neutrophils", "Neutrophil count", "Absolute neutrophils")),
        Input("lymphocytes", "Absolute lymphocyte count", unit=COUNT, analyte="count", min=0.01, max=500,
              aliases=("Absolute lymphocyte count", "ALC", "Lymphocytes", "Lymphocyte count", "Absolute lymphocytes")),
    ),
    compute=lambda v: v["neutrophils"] / v["lymphocytes"],
    output=Output("decimal", None, 2, "NLR"),
    bands=(
        Band("Below the usual adult range (<1)", None, 1),
        Band("Normal (1-2)", 1, 2),
        Band("Grey zone (2-3): possible early or low-grade inflammation/stress", 2, 3),
        Band("Elevated (≥3): systemic inflammation or physiological stress; higher values, more severe", 3, None),
    ),
    tags=("hematology", "inflammation", "sepsis", "oncology"),
    produces=("nlr",),
    reference=Reference(
        purpose="Ratio of absolute neutrophil to lymphocyte counts, a marker of systemic inflammation and stress.",
        when_to_use="Adjunct prognostic marker in sepsis, critical illness, cardiovascular disease and cancer.",
        formula="NLR = absolute neutrophil count / absolute lymphocyte count (same units).",
        citation="Zahorec R. Ratio of neutrophil to lymphocyte counts--rapid and simple parameter of systemic "
        "inflammation and stress in critically ill. Bratisl Lek Listy. 2001;102(1):5-14.",
        notes="Bands follow Zahorec R. Neutrophil-to-lymphocyte ratio, past, present and future perspectives. "
        "Bratisl Lek Listy. 2021;122(7):474-488. No single validated cut-off exists; thresholds vary by disease.",
    ),
    examples=(
        Example({"neutrophils": 9.0, "lymphocytes": 1.0}, 9.0, "Zahorec 2001 definition: 9.0 / 1.0 = 9.0 (hand-computed)", 0.005),
        Example({"neutrophils": ["4500", "cells/µL"], "lymphocytes": [1.5, "10^9/L"]}, 3.0,
                "Zahorec 2001 definition with mixed units: 4.5 / 1.5 = 3.0 (hand-computed)", 0.005),
    ),
)

# -- Plasma dosage ----------------------------------------------------------------------------------

def _plasma(v):
    volume = v["weight"] * v["dose_ml_per_kg"]
    exact = volume / v["unit_volume"]
    return math.floor(exact + 0.5), {"plasma_volume_ml": round(volume), "units_exact": round(exact, 2)}


PLASMA_DOSAGE = Calculator(
    id="plasma_dosage",
    name="Plasma Dosage",
    aliases=("Plasma dose", "FFP dosing", "Fresh frozen plasma dose", "Plasma Dosing for Transfusion"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        replace(WEIGHT, aliases=(*WEIGHT.aliases, "Patient weight")),
        Input("dose_ml_per_kg", "Desired plasma dose", unit="mL/kg", min=1, max=40,
              aliases=("Desired plasma dosage", "Plasma dose", "Dose (mL/kg)"),
              help="Usually 10-20 mL/kg (15 mL/kg is typical)."),
        Input("unit_volume", "Volume per plasma unit", unit="mL", min=50, max=800,
              aliases=("Unit volume", "Volume per unit", "Plasma unit volume")),
    ),
    compute=_plasma,
    output=Output("integer", "units", None, "Plasma units"),
    tags=("hematology", "transfusion", "coagulopathy", "dosing"),
    reference=Reference(
        purpose="Volume and number of units of plasma (FFP) for a weight-based dose.",
        when_to_use="Plasma transfusion for coagulation factor replacement, e.g. bleeding with coagulopathy.",
        formula="Plasma volume (mL) = weight (kg) × dose (mL/kg); units = volume / volume per unit, "
        "rounded half up to the nearest whole unit (the exact quotient is in the details).",
        citation="O'Shaughnessy DF, Atterbury C, Bolton Maggs P, et al. Guidelines for the use of fresh-frozen plasma, "
        "cryoprecipitate and cryosupernatant. Br J Haematol. 2004;126(1):11-28.",
        notes="Unit volumes vary by blood supplier (about 200-300 mL); use the local value. The guideline dose is "
        "10-15 mL/kg and higher doses may be needed.",
    ),
    examples=(
        Example({"weight": 64, "dose_ml_per_kg": 15, "unit_volume": 220}, 4,
                "O'Shaughnessy 2004 weight-based dose: 64 × 15 = 960 mL ÷ 220 mL = 4.36 → 4 units (hand-computed)"),
        Example({"weight": 80, "dose_ml_per_kg": 20, "unit_volume": 250}, 6,
                "80 × 20 = 1600 mL ÷ 250 mL = 6.4 → 6 units (hand-computed)"),
    ),
)

# -- Cryoprecipitate --------------------------------------------------------------------------------

def _cryo(v):
    needed_mg = (v["goal_fibrinogen"] - v["initial_fibrinogen"]) * v["plasma_volume"] / 100
    exact = max(needed_mg, 0) / v["fibrinogen_per_unit"]
    return math.floor(exact + 0.5), {"fibrinogen_needed_mg": round(needed_mg), "units_exact": round(exact, 2)}


CRYO = Calculator(
    id="cryoprecipitate_dosing",
    name="Cryoprecipitate Dosing for Fibrinogen Replacement",
    aliases=("Cryoprecipitate Dosing", "Cryo dosing", "Cryoprecipitate dose"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("plasma_volume", "Plasma volume", unit="mL", min=100, max=10000,
              aliases=("Plasma volume", "Plasma volume (mL)"),
              help="Patient plasma volume, about 40 mL/kg in adults (blood volume × (1 − hematocrit))."),
        Input("initial_fibrinogen", "Initial fibrinogen", unit="mg/dL", min=0, max=1000,
              aliases=("Initial fibrinogen", "Fibrinogen", "Current fibrinogen")),
        Input("goal_fibrinogen", "Goal fibrinogen", unit="mg/dL", min=50, max=1000,
              aliases=("Goal fibrinogen", "Target fibrinogen", "Desired fibrinogen")),
        Input("fibrinogen_per_unit", "Fibrinogen content per unit (mg)", min=50, max=2000,
              aliases=("Fibrinogen content of unit", "Fibrinogen per unit", "mg per unit"),
              help="In mg per cryoprecipitate unit (about 200-250 mg per single-donor unit)."),
    ),
    compute=_cryo,
    output=Output("integer", "units", None, "Cryoprecipitate units"),
    tags=("hematology", "transfusion", "coagulopathy", "dosing"),
    reference=Reference(
        purpose="Number of cryoprecipitate units needed to raise fibrinogen from its current level to a goal.",
        when_to_use="Hypofibrinogenemia with bleeding (e.g. DIC, massive transfusion, obstetric haemorrhage).",
        formula="Fibrinogen needed (mg) = (goal − initial fibrinogen, mg/dL) × plasma volume (mL) / 100 mL/dL;\n"
        "units = fibrinogen needed / fibrinogen per unit (mg), rounded to the nearest whole unit.",
        citation="Droubatchevskaia N, Wong MP, Chipperfield KM, Wadsworth LD, Ferguson DJ. Guidelines for "
        "cryoprecipitate transfusion. B C Med J. 2007;49(8):441-445.",
        notes="The exact quotient is in the details; clinicians often round up to a whole pool. When the goal is "
        "at or below the initial level the dose is 0.",
    ),
    examples=(
        Example({"plasma_volume": 3000, "initial_fibrinogen": 100, "goal_fibrinogen": 200, "fibrinogen_per_unit": 250}, 12,
                "Formula: (200 − 100) × 3000 / 100 = 3000 mg ÷ 250 mg = 12 units (hand-computed)"),
    ),
)

# -- PLASMIC ----------------------------------------------------------------------------------------

def _plasmic(v):
    crit = {
        "platelets_below_30": v["platelets_below_30"],
        "hemolysis": v["hemolysis"],
        "no_active_cancer": not v["active_cancer"],
        "no_transplant": not v["transplant"],
        "mcv_below_90": v["mcv_below_90"],
        "inr_below_1_5": v["inr_below_1_5"],
        "creatinine_below_2": v["creatinine_below_2"],
    }
    return points(crit, dict.fromkeys(crit, 1))


PLASMIC = Calculator(
    id="plasmic_score",
    name="PLASMIC Score for TTP",
    aliases=("PLASMIC Score", "PLASMIC", "PLASMIC score for thrombotic thrombocytopenic purpura"),
    domain=Domain.MEDICINE,
    inputs=(
        flag("platelets_below_30", "Platelet count <30 × 10⁹/L", "Platelet count <30 x 10^9/L", "Platelets <30"),
        flag("hemolysis", "Hemolysis", "Hemolysis",
             help="Reticulocyte count >2.5%, undetectable haptoglobin, or indirect bilirubin >2.0 mg/dL."),
        flag("active_cancer", "Active cancer", "Active cancer", help="Treated within the past year. Scores a point when ABSENT."),
        flag("transplant", "History of solid-organ or stem-cell transplant", "History of solid-organ or stem-cell transplant",
             "Transplant history", help="Scores a point when ABSENT."),
        flag("mcv_below_90", "MCV <90 fL", "MCV <90 fL", "MCV below 90"),
        flag("inr_below_1_5", "INR <1.5", "INR <1.5", "INR below 1.5"),
        flag("creatinine_below_2", "Creatinine <2.0 mg/dL", "Creatinine <2.0 mg/dL (176.8 μmol/L)", "Creatinine <2.0 mg/dL (176.8 umol/L)"),
    ),
    compute=_plasmic,
    output=Output("integer", "points", None, "PLASMIC score"),
    bands=(
        Band("Low risk (0-4): 0-4% risk of severe ADAMTS13 deficiency", None, 5),
        Band("Intermediate risk (5): 5-24% risk of severe ADAMTS13 deficiency", 5, 6),
        Band("High risk (6-7): 62-82% risk of severe ADAMTS13 deficiency", 6, None),
    ),
    tags=("hematology", "thrombotic microangiopathy"),
    reference=Reference(
        purpose="Pre-test probability of severe ADAMTS13 deficiency (<10%), i.e. TTP, in thrombotic microangiopathy.",
        when_to_use="Adults with thrombocytopenia and microangiopathic haemolytic anaemia, before ADAMTS13 results.",
        formula="One point each: platelets <30 × 10⁹/L; haemolysis; NO active cancer; NO solid-organ or stem-cell "
        "transplant; MCV <90 fL; INR <1.5; creatinine <2.0 mg/dL. Total 0-7.",
        citation="Bendapudi PK, Hurwitz S, Fry A, et al. Derivation and external validation of the PLASMIC score for "
        "rapid assessment of adults with thrombotic microangiopathies: a cohort study. Lancet Haematol. 2017;4(4):e157-e164.",
    ),
    examples=(
        Example({"platelets_below_30": True, "hemolysis": True, "active_cancer": False, "transplant": False,
                 "mcv_below_90": True, "inr_below_1_5": True, "creatinine_below_2": True}, 7,
                "Bendapudi 2017 points table: all seven criteria met = 7 (hand-computed)"),
        Example({"platelets_below_30": True, "hemolysis": True, "active_cancer": True, "transplant": False,
                 "mcv_below_90": False, "inr_below_1_5": True, "creatinine_below_2": False}, 4,
                "Bendapudi 2017 points table: platelets + haemolysis + no transplant + INR = 4 (hand-computed)"),
    ),
)

# -- ISTH overt DIC ---------------------------------------------------------------------------------

def _dic(v):
    plt, pt, fib = v["platelets"], v["pt_prolongation"], v["fibrinogen"]
    pts = {
        "platelets": 0 if plt >= 100 else 1 if plt >= 50 else 2,
        "fibrin_marker": v["fibrin_marker"],
        "pt_prolongation": 0 if pt < 3 else 1 if pt < 6 else 2,
        "fibrinogen": 0 if fib >= 1.0 else 1,
    }
    return sum(pts.values()), pts


ISTH_DIC = Calculator(
    id="isth_dic",
    name="ISTH Criteria for Disseminated Intravascular Coagulation (DIC)",
    aliases=("ISTH DIC Score", "ISTH overt DIC score", "DIC score", "ISTH Criteria for DIC"),
    domain=Domain.CRITICAL_CARE,
    inputs=(
        Input("platelets", "Platelet count", unit=COUNT, analyte="count", min=0, max=2000,
              aliases=("Platelet count, cells x 10^9/L", "Platelet count", "Platelets", "PLT")),
        graded("fibrin_marker", "Elevated fibrin-related marker", [
            ("No increase", 0, ("None", "Normal")),
            ("Moderate increase", 2, ("Moderate",)),
            ("Strong increase", 3, ("Severe increase", "Strong", "Severe", "Marked increase")),
        ], "Elevated levels of a fibrin-related marker (e.g. D-dimer, fibrin degradation products)",
            "Fibrin-related marker", "D-dimer", "Fibrin degradation products"),
        Input("pt_prolongation", "PT prolongation above the upper limit of normal (seconds)", min=-10, max=200,
              aliases=("Prolonged PT, seconds", "Prolonged PT", "PT prolongation", "PT above ULN (s)"),
              help="Seconds by which the prothrombin time exceeds the laboratory's upper limit of normal (0 if normal)."),
        Input("fibrinogen", "Fibrinogen", unit="g/L", min=0, max=15,
              aliases=("Fibrinogen level, g/L", "Fibrinogen level", "Fibrinogen")),
    ),
    compute=_dic,
    output=Output("integer", "points", None, "ISTH DIC score"),
    bands=(
        Band("Not suggestive of overt DIC (<5); may indicate non-overt DIC, repeat in 1-2 days", None, 5),
        Band("Compatible with overt DIC (≥5); repeat scoring daily", 5, None),
    ),
    tags=("hematology", "coagulopathy", "sepsis", "critical care"),
    reference=Reference(
        purpose="Diagnoses overt disseminated intravascular coagulation from four routine coagulation tests.",
        when_to_use="Only in patients with an underlying disorder known to be associated with DIC.",
        formula="| Test | Points |\n|---|---|\n| Platelets ≥100 / 50-<100 / <50 × 10⁹/L | 0 / 1 / 2 |\n"
        "| Fibrin-related marker: no / moderate / strong increase | 0 / 2 / 3 |\n"
        "| PT prolonged <3 s / 3-<6 s / ≥6 s | 0 / 1 / 2 |\n| Fibrinogen ≥1 g/L / <1 g/L | 0 / 1 |\n\nTotal ≥5: overt DIC.",
        citation="Taylor FB Jr, Toh CH, Hoots WK, Wada H, Levi M. Towards definition, clinical and laboratory criteria, "
        "and a scoring system for disseminated intravascular coagulation. Thromb Haemost. 2001;86(5):1327-1330.",
        notes="Boundaries as commonly implemented (MDCalc): platelets exactly 100 and fibrinogen exactly 1.0 g/L score 0; "
        "PT prolongation exactly 3 s scores 1 and exactly 6 s scores 2. What counts as a moderate vs strong rise of "
        "the fibrin marker is assay-specific.",
    ),
    examples=(
        Example({"platelets": 68, "fibrin_marker": "Strong increase", "pt_prolongation": 4.5, "fibrinogen": 0.9}, 6,
                "Taylor 2001 scoring table: platelets 50–100 1 + strong increase 3 + PT 3–6 s 1 + fibrinogen ≤ 1 g/L 1 "
                "= 6 (hand-computed)"),
        Example({"platelets": 120, "fibrin_marker": "Moderate increase", "pt_prolongation": 2, "fibrinogen": 2.5}, 2,
                "Taylor 2001 scoring table: 0 + 2 + 0 + 0 = 2 (hand-computed)"),
    ),
)

CALCULATORS = [NLR, PLASMA_DOSAGE, CRYO, PLASMIC, ISTH_DIC]
