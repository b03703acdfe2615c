"""Fluid and infusion calculators: sodium correction rate, glucose infusion rate, IV drip rate,
urine output and fluid balance. Rates are per hour or per minute as the bedside tools report them."""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import SEX, SODIUM, WEIGHT
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain

# -- Sodium correction rate (Adrogué-Madias) ---------------------------------------------------------
# Infusate cation content (Na⁺ + K⁺, mmol/L), Adrogué & Madias NEJM 2000, table 3.
INFUSATES = (
    Choice("5% sodium chloride in water (855 mmol/L Na)", 855, ("5% saline", "5% NaCl", "5% sodium chloride")),
    Choice("3% sodium chloride in water (513 mmol/L Na)", 513, ("3% saline", "3% NaCl", "hypertonic saline",
                                                                 "3% sodium chloride")),
    Choice("0.9% sodium chloride in water (154 mmol/L Na)", 154, ("0.9% saline", "normal saline", "NS", "0.9% NaCl",
                                                                   "0.9% saline (154 mmol/L Na)")),
    Choice("Ringer's lactate solution (130 mmol/L Na, 4 mmol/L K)", 134, ("Ringer's lactate", "lactated Ringer's",
                                                                           "LR", "Ringer lactate")),
    Choice("0.45% sodium chloride in water (77 mmol/L Na)", 77, ("0.45% saline", "half normal saline", "0.45% NaCl",
                                                                  "0.45% saline (77 mmol/L Na)")),
    Choice("0.2% sodium chloride in 5% dextrose (34 mmol/L Na)", 34, ("0.2% saline", "D5 0.2% NaCl", "D5 1/4NS",
                                                                       "0.2% saline (34 mmol/L Na)")),
    Choice("5% dextrose in water (0 mmol/L Na)", 0, ("D5W", "5% dextrose", "5% Dextrose in water (0 mmol/L Na)",
                                                     "dextrose 5%")),
)

# Total body water as a fraction of weight (Adrogué & Madias 2000).
TBW_FRACTION = {("child", "male"): 0.6, ("child", "female"): 0.6, ("adult", "male"): 0.6, ("adult", "female"): 0.5,
                ("elderly", "male"): 0.5, ("elderly", "female"): 0.45}

AGE_GROUP = Input(
    "age_group", "Age range", type="choice",
    choices=(Choice("Child (<18 years)", "child", ("Child", "pediatric", "children")),
             Choice("Adult (18-64 years)", "adult", ("Adult",)),
             Choice("Elderly (≥65 years)", "elderly", ("Elderly", "older adult", "geriatric"))),
    aliases=("Age range", "age group"),
    help="Sets total body water: 0.6 × weight (child; adult man), 0.5 (adult woman; elderly man), 0.45 (elderly woman).",
)


def _na_rate(v):
    if v["infusate"] is not None:
        cation = float(v["infusate"])
    elif v["infusate_sodium"] is not None:
        cation = v["infusate_sodium"] + (v["infusate_potassium"] or 0.0)
    else:
        raise CalculatorInputError("sodium_correction_rate", "infusate", "give a fluid type or infusate_sodium")
    tbw = TBW_FRACTION[v["age_group"], v["sex"]] * v["weight"]
    change_per_l = (cation - v["sodium"]) / (tbw + 1)
    if abs(change_per_l) < 1e-9:
        raise CalculatorInputError("sodium_correction_rate", "infusate",
                                   "infusate cation content equals serum sodium, so it cannot change sodium")
    rate = v["correction_rate"] / abs(change_per_l) * 1000
    d = {"total_body_water_l": round(tbw, 1), "change_in_sodium_per_liter": round(change_per_l, 2),
         "direction": "increase" if change_per_l > 0 else "decrease", "infusate_cation_mmol_l": cation}
    if 135 <= v["sodium"] <= 145:
        d["warning"] = "Serum sodium is within normal limits; confirm correction is needed."
    return rate, d


SODIUM_RATE = Calculator(
    id="sodium_correction_rate",
    name="Sodium Correction Rate in Hyponatremia and Hypernatremia",
    aliases=("Sodium Correction Rate in Hyponatremia and Hypernatremia", "Adrogue-Madias formula",
             "Adrogué-Madias sodium correction", "Sodium correction rate"),
    domain=Domain.SPECIAL_POPULATIONS,
    tags=("electrolytes", "hyponatremia", "hypernatremia", "nephrology", "infusion", "ICU"),
    inputs=(
        SEX,
        AGE_GROUP,
        WEIGHT,
        replace(SODIUM, aliases=(*SODIUM.aliases, "Serum sodium")),
        Input("infusate", "Fluid type", type="choice", choices=INFUSATES, optional=True,
              aliases=("Fluid type", "infusate"), help="Give this or infusate_sodium."),
        Input("infusate_sodium", "Infusate sodium", unit="mEq/L", analyte="sodium", min=0, max=1000, optional=True,
              aliases=("infusate Na",), help="For a fluid not in the list; used when no fluid type is given."),
        Input("infusate_potassium", "Infusate potassium", unit="mEq/L", analyte="potassium", min=0, max=200,
              optional=True, default=0.0, aliases=("infusate K",), help="Default 0; added to infusate sodium."),
        Input("correction_rate", "Rate of sodium correction", unit="mEq/L/h", analyte="sodium", min=0.01, max=2,
              aliases=("Rate of sodium correction", "desired correction rate"),
              help="Desired change in serum sodium per hour (e.g. 0.3-0.5; ≤ 8-10 mEq/L per 24 h)."),
    ),
    compute=_na_rate,
    output=Output("integer", "mL/hr", None, "Infusion rate"),
    reference=Reference(
        purpose="Infusion rate of a chosen fluid that changes serum sodium at a set hourly rate.",
        when_to_use="Planning treatment of hyponatraemia or hypernatraemia; re-check sodium frequently because the "
        "formula ignores ongoing losses.",
        formula="TBW = weight × 0.6 (child, adult man), 0.5 (adult woman, elderly man), 0.45 (elderly woman). "
        "Change in serum Na per litre infused = (infusate Na + infusate K − serum Na) / (TBW + 1). "
        "Rate (mL/h) = desired change per hour / |change per litre| × 1000.",
        citation="Adrogué HJ, Madias NE. Hyponatremia. N Engl J Med. 2000;342(21):1581-1589; Adrogué HJ, Madias NE. "
        "Hypernatremia. N Engl J Med. 2000;342(20):1493-1499.",
        notes="The rate is computed from the absolute change per litre; details say whether the chosen fluid raises or "
        "lowers sodium, so a fluid that moves sodium the wrong way is visible there. Limit correction of chronic "
        "hyponatraemia to ≤ 8-10 mEq/L in 24 h (osmotic demyelination).",
    ),
    examples=(
        Example({"sex": "female", "age_group": "adult", "weight": 64, "sodium": 160, "infusate": "0.45% saline",
                 "correction_rate": 0.4}, 159,
                "Hand-computed per the Adrogué-Madias formula (NEJM 2000) on fresh values: TBW 0.5 × 64 = 32 L; "
                "(77 − 160)/(32 + 1) = −2.52 mEq/L per litre; 0.4 / 2.52 × 1000 = 159 mL/h"),
        Example({"sex": "female", "age_group": "elderly", "weight": 60, "sodium": 110, "infusate": "3% saline",
                 "correction_rate": 0.5}, 35,
                "Hand-computed with Adrogué-Madias: (513 − 110)/(0.45×60 + 1) = 14.39 per L; 0.5/14.39 L/h"),
    ),
)

# -- Glucose infusion rate -------------------------------------------------------------------------
GIR = Calculator(
    id="glucose_infusion_rate",
    name="Glucose Infusion Rate (GIR)",
    aliases=("Glucose Infusion Rate (GIR)", "GIR", "Dextrose infusion rate"),
    domain=Domain.SPECIAL_POPULATIONS,
    tags=("neonatology", "nutrition", "infusion", "hypoglycemia", "pediatrics"),
    inputs=(
        Input("dextrose_concentration", "Dextrose concentration (%, g/dL)", min=0.1, max=70,
              aliases=("Dextrose concentration", "dextrose %"), help="Percent dextrose, i.e. g/dL (D10 = 10)."),
        Input("infusion_rate", "Infusion rate", unit="mL/h", min=0.01, max=5000, aliases=("Infusion rate", "rate")),
        WEIGHT,
    ),
    compute=lambda v: v["dextrose_concentration"] * v["infusion_rate"] / (6 * v["weight"]),
    output=Output("decimal", "mg/kg/min", 1, "Glucose infusion rate"),
    reference=Reference(
        purpose="Glucose delivery from a dextrose infusion, per kg per minute.",
        when_to_use="Neonates and children on dextrose infusions or parenteral nutrition; adults on dextrose infusions.",
        formula="GIR (mg/kg/min) = dextrose % (g/dL) × rate (mL/h) × 10 / (60 × weight kg) = % × rate / (6 × weight).",
        interpretation="Neonates usually need 4-8 mg/kg/min (endogenous glucose production); adults oxidise at most "
        "about 4-5 mg/kg/min, so higher rates risk hyperglycaemia and lipogenesis.",
        citation="Gomella TL, Eyal FG, Bany-Mohammed F. Gomella's Neonatology: Management, Procedures, On-Call Problems, "
        "Diseases, and Drugs. 8th ed. McGraw-Hill; 2020 (glucose infusion rate); Wolfe RR, O'Donnell TF, Stone MD, "
        "Richmond DA, Burke JF. Investigation of factors determining the optimal glucose infusion rate in total "
        "parenteral nutrition. Metabolism. 1980;29(9):892-900.",
        notes="The concentration is taken as a plain percent number (g/dL); give 10 for D10W.",
    ),
    examples=(
        Example({"dextrose_concentration": 10, "infusion_rate": 12, "weight": 3.0}, 6.7,
                "Hand-computed: 10 × 12 / (6 × 3.0) = 6.67", 0.05),
        Example({"dextrose_concentration": 12.5, "infusion_rate": 8.4, "weight": 2.1}, 8.3,
                "Hand-computed per the GIR formula (% × mL/h / (6 × kg)): 12.5 × 8.4 / (6 × 2.1) = 8.33", 0.05),
    ),
)

# -- IV drip rate ----------------------------------------------------------------------------------
IV_DRIP = Calculator(
    id="iv_drip_rate",
    name="IV Drip Rate Calculator",
    aliases=("IV Drip Rate Calculator", "IV drip rate", "Drops per minute", "Gravity infusion rate"),
    domain=Domain.SPECIAL_POPULATIONS,
    tags=("nursing", "infusion", "pharmacology"),
    inputs=(
        Input("volume", "Volume to be given", unit="mL", min=1, max=10000, aliases=("Volume to be given", "volume")),
        Input("drop_factor", "Drop factor (gtt/mL)", min=1, max=100, aliases=("Drop factor", "drip factor"),
              help="Drops per mL of the giving set: 10, 15 or 20 (macro), 60 (micro)."),
        Input("time", "Time", unit="min", min=1, max=10080, aliases=("Time", "infusion time", "duration"),
              help="Infusion duration; hours are converted."),
    ),
    compute=lambda v: (v["volume"] * v["drop_factor"] / v["time"], {"ml_per_hour": round(v["volume"] / v["time"] * 60, 1)}),
    output=Output("integer", "gtt/min", None, "Drip rate"),
    reference=Reference(
        purpose="Drops per minute for a gravity infusion.",
        when_to_use="Infusions given without a pump.",
        formula="Drip rate (gtt/min) = volume (mL) × drop factor (gtt/mL) / time (min).",
        citation="Gray Morris D. Calculate with Confidence. 7th ed. St. Louis: Elsevier; 2018 (IV flow rate "
        "calculations).",
        notes="Rounded to whole drops per minute, as counted at the bedside.",
    ),
    examples=(
        Example({"volume": 750, "drop_factor": 10, "time": 300}, 25,
                "Hand-computed per the drip-rate formula (volume × drop factor / minutes): 750 × 10 / 300 = 25"),
        Example({"volume": 500, "drop_factor": 15, "time": "4 h"}, 31, "Hand-computed: 500 × 15 / 240 = 31.25"),
    ),
)

# -- Urine output and fluid balance ---------------------------------------------------------------
def _uo(v):
    rate = v["urine_output"] / v["weight"] / v["hours"]
    d = {"urine_ml_per_hour": round(v["urine_output"] / v["hours"], 1)}
    if v["fluid_intake"] is not None:
        d["fluid_balance_ml"] = round(v["fluid_intake"] - v["urine_output"], 1)
    return rate, d


URINE_OUTPUT = Calculator(
    id="urine_output_fluid_balance",
    name="Urine Output and Fluid Balance",
    aliases=("Urine Output and Fluid Balance", "Urine output calculator", "Urine output per kg per hour"),
    domain=Domain.CRITICAL_CARE,
    tags=("nephrology", "fluid balance", "AKI", "ICU", "nursing"),
    produces=("urine_output_ml_kg_h",),
    inputs=(
        WEIGHT,
        Input("urine_output", "Total urine output", unit="mL", min=0, max=30000,
              aliases=("Total urine output", "Urine Output", "urine volume")),
        Input("hours", "Hours", unit="h", min=0.5, max=168, aliases=("Hours", "collection period")),
        Input("fluid_intake", "Fluid intake", unit="mL", min=0, max=50000, optional=True,
              aliases=("Fluid intake", "total intake"), help="Optional; gives the net fluid balance in details."),
    ),
    compute=_uo,
    output=Output("decimal", "mL/kg/hr", 1, "Urine output"),
    bands=(
        Band("Below 0.5 mL/kg/h: oliguria in adults (KDIGO AKI urine criterion)", None, 0.5),
        Band("0.5-1.0 mL/kg/h: normal adult range", 0.5, 1.05),
        Band("Above 1.0 mL/kg/h: above the adult normal range (normal for children 1-2)", 1.05, None),
    ),
    reference=Reference(
        purpose="Weight-indexed urine output and net fluid balance over a collection period.",
        when_to_use="Monitoring of hospitalised, critically ill or perioperative patients; AKI staging by urine output.",
        formula="Urine output (mL/kg/h) = urine volume (mL) / weight (kg) / hours. Fluid balance (mL) = intake − urine output.",
        interpretation="Adults: 0.5-1.0 mL/kg/h normal, < 0.5 for ≥ 6 h meets the KDIGO AKI urine criterion. Children: "
        "1-2 mL/kg/h.",
        citation="Kidney Disease: Improving Global Outcomes (KDIGO) Acute Kidney Injury Work Group. KDIGO Clinical "
        "Practice Guideline for Acute Kidney Injury. Kidney Int Suppl. 2012;2(1):1-138.",
        notes="The fluid balance counts urine only; add other measured losses to the output for a full balance.",
    ),
    examples=(
        Example({"weight": 95, "urine_output": 2600, "hours": 24, "fluid_intake": 3100}, 1.1,
                "Hand-computed per the weight-indexed urine output (KDIGO 2012): 2600 / 95 / 24 = 1.14 mL/kg/h "
                "(balance +500 mL)", 0.05),
        Example({"weight": 80, "urine_output": 300, "hours": 12}, 0.3, "Hand-computed: 300 / 80 / 12 = 0.31", 0.05),
    ),
)

CALCULATORS = [SODIUM_RATE, GIR, IV_DRIP, URINE_OUTPUT]
