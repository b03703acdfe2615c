"""Electrolyte and acid-base calculators: corrected calcium and sodium, serum osmolality, free water
deficit, and the anion-gap family (anion gap, delta gap/ratio, albumin-corrected versions)."""

from __future__ import annotations

from calcmate.calculators._common import AGE, ALBUMIN, BICARBONATE, BUN, CHLORIDE, GLUCOSE, SEX, SODIUM, WEIGHT
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain

CALCIUM = Input("calcium", "Total serum calcium", unit="mg/dL", analyte="calcium", min=2, max=25,
                aliases=("Calcium", "Total calcium", "serum calcium", "Ca"))
NORMAL_ALBUMIN = Input(
    "normal_albumin", "Normal albumin", unit="g/dL", min=3, max=5.5, optional=True, default=4.0,
    aliases=("Normal albumin: 4 g/dL or 40 g/L", "Normal albumin", "reference albumin"),
    help="the albumin the correction is relative to; default 4 g/dL",
)


def _calcium_correction(v):
    return v["calcium"] + 0.8 * (v["normal_albumin"] - v["albumin"])


CALCIUM_CORRECTION = Calculator(
    id="calcium_correction",
    name="Calcium Correction for Hypoalbuminemia",
    aliases=("Calcium Correction for Hypoalbuminemia and Hyperalbuminemia", "Corrected calcium",
             "Albumin-corrected calcium", "Payne corrected calcium"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=7,
    tags=("electrolytes", "endocrine", "calcium"),
    produces=("corrected_calcium",),
    inputs=(CALCIUM, ALBUMIN, NORMAL_ALBUMIN),
    compute=_calcium_correction,
    output=Output("decimal", "mg/dL", 2, "Corrected calcium"),
    bands=(Band("Low (<8.5 mg/dL)", None, 8.5), Band("Normal (8.5-10.5 mg/dL)", 8.5, 10.5),
           Band("High (>10.5 mg/dL)", 10.5, None)),
    reference=Reference(
        purpose="Estimates total calcium corrected for an abnormal serum albumin.",
        when_to_use="Hypo- or hyperalbuminaemia when ionised calcium is not available.",
        formula="Corrected Ca (mg/dL) = measured Ca + 0.8 × (normal albumin − albumin (g/dL)); normal albumin 4 g/dL.",
        citation="Payne RB, Little AJ, Williams RB, Milner JR. Interpretation of serum calcium in patients with "
        "abnormal serum proteins. Br Med J. 1973;4(5893):643-646.",
        notes="Poorly predicts ionised calcium in critical illness and CKD; measure ionised calcium when it matters.",
    ),
    examples=(
        Example({"calcium": 7.6, "albumin": 2.2}, 9.04, "Hand-computed from Payne 1973: 7.6 + 0.8*(4-2.2) = 9.04", 0.005),
        Example({"calcium": [2.0, "mmol/L"], "albumin": [25, "g/L"]}, 9.22,
                "Hand-computed: 2.0 mmol/L = 8.016 mg/dL; 8.016 + 0.8*(4-2.5) = 9.22", 0.01),
    ),
)

NA_FACTOR = Input(
    "correction_factor", "Correction factor (mEq/L per 100 mg/dL glucose)", type="choice", optional=True, default=2.4,
    choices=(Choice("Hillier (2.4)", 2.4, ("hillier",)), Choice("Katz (1.6)", 1.6, ("katz",))),
    help="default Hillier 1999 (2.4), as MDCalc and MedCalc-Bench use; Katz 1973 (1.6) is the older factor",
)


def _sodium_correction(v):
    return v["sodium"] + v["correction_factor"] * (v["glucose"] - 100) / 100


SODIUM_CORRECTION = Calculator(
    id="sodium_correction_hyperglycemia",
    name="Sodium Correction for Hyperglycemia",
    aliases=("Corrected sodium", "Corrected sodium for hyperglycemia", "Hillier sodium correction"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=26,
    tags=("electrolytes", "diabetes", "dka", "hhs"),
    produces=("corrected_sodium",),
    inputs=(SODIUM, GLUCOSE, NA_FACTOR),
    compute=_sodium_correction,
    output=Output("decimal", "mEq/L", 1, "Corrected sodium"),
    bands=(Band("Hyponatremia (<135 mEq/L)", None, 135), Band("Normal (135-145 mEq/L)", 135, 145.0001),
           Band("Hypernatremia (>145 mEq/L)", 145.0001, None)),
    reference=Reference(
        purpose="Sodium expected once hyperglycaemia (which dilutes sodium by water shift) is corrected.",
        when_to_use="Hyperglycaemia (DKA, HHS) to judge true tonicity and free-water status.",
        formula="Corrected Na = measured Na + 2.4 × (glucose (mg/dL) − 100)/100 (Hillier); Katz uses 1.6.",
        citation="Hillier TA, Abbott RD, Barrett EJ. Hyponatremia: evaluating the correction factor for "
        "hyperglycemia. Am J Med. 1999;106(4):399-403.",
        notes="MedCalc-Bench uses 0.024 × (glucose − 100), i.e. Hillier's 2.4 per 100 mg/dL (dev row: Na 141, "
        "glucose 110 → 141.24). Katz MA, N Engl J Med 1973;289:843-844 proposed 1.6; choose it with correction_factor.",
    ),
    examples=(
        Example({"sodium": 128, "glucose": 350}, 134.0, "Hand-computed from Hillier 1999: 128 + 2.4*2.5 = 134.0", 0.05),
        Example({"sodium": 130, "glucose": 600, "correction_factor": "Katz"}, 138.0,
                "Hand-computed from Katz 1973: 130 + 1.6*5 = 138.0", 0.05),
    ),
)

ETHANOL = Input("ethanol", "Serum ethanol", unit="mg/dL", analyte="ethanol", min=0, max=2000, optional=True, default=0.0,
                aliases=("Serum alcohol concentration", "Ethanol", "EtOH", "blood alcohol"),
                help="adds ethanol/3.7 when given; default 0 (not measured)")
MEASURED_OSM = Input("measured_osmolality", "Measured serum osmolality", unit="mOsm/kg", min=150, max=500, optional=True,
                     aliases=("Measured serum osm", "Measured osmolality", "measured osm"),
                     help="when given, the osmolal gap (measured − calculated) is reported in the details")


def _serum_osm(v):
    calc = 2 * v["sodium"] + v["bun"] / 2.8 + v["glucose"] / 18 + (v["ethanol"] or 0) / 3.7
    details = {}
    if v["measured_osmolality"] is not None:
        details["osmolal_gap"] = v["measured_osmolality"] - calc
    return calc, details


SERUM_OSMOLALITY = Calculator(
    id="serum_osmolality",
    name="Serum Osmolality",
    aliases=("Serum Osmolality/Osmolarity", "Calculated serum osmolality", "Calculated osmolality", "Osmolal gap"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=30,
    tags=("electrolytes", "toxicology", "hyponatremia"),
    produces=("serum_osmolality",),
    inputs=(SODIUM, BUN, GLUCOSE, ETHANOL, MEASURED_OSM),
    compute=_serum_osm,
    output=Output("decimal", "mOsm/kg", 1, "Calculated serum osmolality"),
    bands=(Band("Low (<275 mOsm/kg)", None, 275), Band("Normal (275-295 mOsm/kg)", 275, 295.0001),
           Band("High (>295 mOsm/kg)", 295.0001, None)),
    reference=Reference(
        purpose="Calculated serum osmolality; with a measured value, the osmolal gap for toxic alcohols.",
        when_to_use="Hypo-/hypernatraemia work-up; suspected toxic alcohol ingestion (osmolal gap > 10).",
        formula="Calculated osm = 2 × Na (mEq/L) + BUN (mg/dL)/2.8 + glucose (mg/dL)/18 [+ ethanol (mg/dL)/3.7].",
        citation="Dorwart WV, Chalmers L. Comparison of methods for calculating serum osmolality from chemical "
        "concentrations, and the prognostic value of such calculations. Clin Chem. 1975;21(2):190-194. "
        "Ethanol term: Purssell RA et al. Ann Emerg Med. 2001;38(6):653-659.",
    ),
    examples=(
        Example({"sodium": 140, "bun": 14, "glucose": 90}, 290.0, "Hand-computed: 280 + 5 + 5 = 290", 0.05),
        Example({"sodium": 132, "bun": 42, "glucose": 450}, 304.0, "Hand-computed: 264 + 42/2.8 + 450/18 = 264 + 15 + 25 = 304", 0.05),
    ),
)

TARGET_SODIUM = Input("target_sodium", "Desired sodium", unit="mEq/L", analyte="sodium", min=120, max=160,
                      optional=True, default=140.0, aliases=("Sodium desired", "Ideal sodium", "target sodium"),
                      help="default 140 mEq/L")


def tbw_fraction(age_years: float, sex: str) -> float:
    """Total body water fraction: children 0.6; men 0.6 (<65) / 0.5 (≥65); women 0.5 (<65) / 0.45 (≥65)."""
    if age_years < 18:
        return 0.6
    if sex == "male":
        return 0.6 if age_years < 65 else 0.5
    return 0.5 if age_years < 65 else 0.45


def _free_water_deficit(v):
    f = tbw_fraction(v["age"], v["sex"])
    return f * v["weight"] * (v["sodium"] / v["target_sodium"] - 1), {"tbw_fraction": f, "tbw_l": f * v["weight"]}


FREE_WATER_DEFICIT = Calculator(
    id="free_water_deficit",
    name="Free Water Deficit",
    aliases=("Free Water Deficit in Hypernatremia", "FWD", "Water deficit"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=38,
    tags=("electrolytes", "hypernatremia", "fluids"),
    inputs=(AGE, SEX, WEIGHT, SODIUM, TARGET_SODIUM),
    compute=_free_water_deficit,
    output=Output("decimal", "L", 3, "Free water deficit"),
    reference=Reference(
        purpose="Litres of free water needed to bring sodium to the target in hypernatraemia.",
        when_to_use="Hypernatraemia; correct no faster than about 10-12 mEq/L per 24 h in chronic cases.",
        formula="FWD (L) = TBW fraction × weight (kg) × (Na / target Na − 1); TBW fraction 0.6 children and men < 65, "
        "0.5 men ≥ 65 and women < 65, 0.45 women ≥ 65; target Na 140 mEq/L.",
        citation="Adrogué HJ, Madias NE. Hypernatremia. N Engl J Med. 2000;342(20):1493-1499.",
        notes="A negative value means sodium is below target (no free-water deficit), reported as computed.",
    ),
    examples=(
        Example({"age": 45, "sex": "male", "weight": 80, "sodium": 154}, 4.8,
                "Hand-computed: 0.6*80*(154/140-1) = 48*0.1 = 4.8", 0.005),
        Example({"age": 70, "sex": "female", "weight": 60, "sodium": 160}, 3.857,
                "Hand-computed: 0.45*60*(160/140-1) = 3.857", 0.005),
    ),
)


def anion_gap(v) -> float:
    return v["sodium"] - (v["chloride"] + v["bicarbonate"])


def albumin_corrected_ag(v) -> float:
    return anion_gap(v) + 2.5 * (4.0 - v["albumin"])


def _delta_ratio(v, gap: float) -> float:
    if v["bicarbonate"] == 24:
        raise CalculatorInputError("delta_ratio", "bicarbonate", "24 mEq/L makes the delta ratio undefined (0 denominator)")
    return (gap - 12) / (24 - v["bicarbonate"])


_LYTES = (SODIUM, CHLORIDE, BICARBONATE)
_AG_REF = ("Emmett M, Narins RG. Clinical use of the anion gap. Medicine (Baltimore). 1977;56(1):38-54.")
_DELTA_REF = "Wrenn K. The delta (Δ) gap: an approach to mixed acid-base disorders. Ann Emerg Med. 1990;19(11):1310-1313."
_ALB_REF = "Figge J, Jabor A, Kazda A, Fencl V. Anion gap and hypoalbuminemia. Crit Care Med. 1998;26(11):1807-1810."
_DR_BANDS = (
    Band("<0.4: hyperchloraemic normal anion gap acidosis", None, 0.4),
    Band("0.4-0.8: combined high and normal anion gap acidosis", 0.4, 0.8),
    Band("0.8-2.0: pure high anion gap acidosis", 0.8, 2.0),
    Band(">2.0: high anion gap acidosis with concurrent metabolic alkalosis or chronic respiratory acidosis", 2.0, None),
)

ANION_GAP = Calculator(
    id="anion_gap",
    name="Anion Gap",
    aliases=("Serum Anion Gap", "AG"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=39,
    tags=("acid-base", "electrolytes", "metabolic acidosis", "toxicology"),
    produces=("anion_gap",),
    inputs=_LYTES,
    compute=anion_gap,
    output=Output("decimal", "mEq/L", 1, "Anion gap"),
    bands=(Band("Low (<3 mEq/L)", None, 3), Band("Normal (3-12 mEq/L)", 3, 12.0001), Band("High (>12 mEq/L)", 12.0001, None)),
    reference=Reference(
        purpose="Unmeasured anions, to classify metabolic acidosis as high or normal anion gap.",
        when_to_use="Metabolic acidosis work-up.",
        formula="AG = Na − (Cl + HCO₃⁻) (mEq/L).",
        citation=_AG_REF,
        notes="Normal range depends on the analyser (often 3-11 with ion-selective electrodes); hypoalbuminaemia "
        "lowers it (use the albumin-corrected anion gap).",
    ),
    examples=(Example({"sodium": 137, "chloride": 98, "bicarbonate": 14}, 25.0, "Hand-computed: 137 − (98 + 14) = 25", 0.05),),
)

DELTA_GAP = Calculator(
    id="delta_gap",
    name="Delta Gap",
    aliases=("Delta anion gap", "Excess anion gap"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=63,
    tags=("acid-base", "electrolytes", "mixed disorders"),
    inputs=_LYTES,
    compute=lambda v: anion_gap(v) - 12,
    output=Output("decimal", "mEq/L", 1, "Delta gap"),
    reference=Reference(
        purpose="How far the anion gap exceeds normal, to look for a second acid-base disorder.",
        when_to_use="High anion gap metabolic acidosis.",
        formula="Delta gap = AG − 12, with AG = Na − (Cl + HCO₃⁻).",
        citation=_DELTA_REF,
    ),
    examples=(Example({"sodium": 139, "chloride": 100, "bicarbonate": 12}, 15.0, "Hand-computed: (139−112) − 12 = 15", 0.05),),
)

DELTA_RATIO = Calculator(
    id="delta_ratio",
    name="Delta Ratio",
    aliases=("Delta-delta", "Delta delta ratio", "Δ/Δ ratio"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=64,
    tags=("acid-base", "electrolytes", "mixed disorders"),
    inputs=_LYTES,
    compute=lambda v: _delta_ratio(v, anion_gap(v)),
    output=Output("decimal", None, 2, "Delta ratio"),
    bands=_DR_BANDS,
    reference=Reference(
        purpose="Compares the rise in anion gap with the fall in bicarbonate to detect mixed disorders.",
        when_to_use="High anion gap metabolic acidosis.",
        formula="Delta ratio = (AG − 12) / (24 − HCO₃⁻).",
        citation=_DELTA_REF,
        notes="Undefined at HCO₃⁻ = 24 mEq/L (an input error is raised).",
    ),
    examples=(Example({"sodium": 136, "chloride": 96, "bicarbonate": 10}, 1.29,
                      "Hand-computed: AG 30; (30−12)/(24−10) = 1.286", 0.005),),
)

ACAG = Calculator(
    id="albumin_corrected_anion_gap",
    name="Albumin Corrected Anion Gap",
    aliases=("Albumin-corrected anion gap", "Corrected anion gap", "ACAG"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=65,
    tags=("acid-base", "electrolytes", "hypoalbuminemia"),
    inputs=(*_LYTES, ALBUMIN),
    compute=albumin_corrected_ag,
    output=Output("decimal", "mEq/L", 2, "Albumin-corrected anion gap"),
    reference=Reference(
        purpose="Anion gap corrected for low albumin, which otherwise hides a high anion gap acidosis.",
        when_to_use="Metabolic acidosis with hypoalbuminaemia (critical illness, cirrhosis, nephrotic syndrome).",
        formula="ACAG = AG + 2.5 × (4 − albumin (g/dL)), AG = Na − (Cl + HCO₃⁻).",
        citation=_ALB_REF,
    ),
    examples=(Example({"sodium": 141, "chloride": 104, "bicarbonate": 18, "albumin": 2.0}, 24.0,
                      "Hand-computed from Figge 1998: AG 19 + 2.5*(4−2.0) = 24.0", 0.05),),
)

AC_DELTA_GAP = Calculator(
    id="albumin_corrected_delta_gap",
    name="Albumin Corrected Delta Gap",
    aliases=("Albumin-corrected delta gap",),
    domain=Domain.MEDICINE,
    medcalc_bench_id=66,
    tags=("acid-base", "electrolytes", "hypoalbuminemia", "mixed disorders"),
    inputs=(*_LYTES, ALBUMIN),
    compute=lambda v: albumin_corrected_ag(v) - 12,
    output=Output("decimal", "mEq/L", 2, "Albumin-corrected delta gap"),
    reference=Reference(
        purpose="Delta gap computed from the albumin-corrected anion gap.",
        when_to_use="High anion gap acidosis with hypoalbuminaemia.",
        formula="Albumin-corrected delta gap = ACAG − 12, ACAG = Na − (Cl + HCO₃⁻) + 2.5 × (4 − albumin (g/dL)).",
        citation=f"{_ALB_REF} {_DELTA_REF}",
    ),
    examples=(Example({"sodium": 140, "chloride": 106, "bicarbonate": 20, "albumin": 3.0}, 4.5,
                      "Hand-computed: AG 14; ACAG 14 + 2.5*(4−3.0) = 16.5; 16.5 − 12 = 4.5", 0.05),),
)

AC_DELTA_RATIO = Calculator(
    id="albumin_corrected_delta_ratio",
    name="Albumin Corrected Delta Ratio",
    aliases=("Albumin-corrected delta ratio",),
    domain=Domain.MEDICINE,
    medcalc_bench_id=67,
    tags=("acid-base", "electrolytes", "hypoalbuminemia", "mixed disorders"),
    inputs=(*_LYTES, ALBUMIN),
    compute=lambda v: _delta_ratio(v, albumin_corrected_ag(v)),
    output=Output("decimal", None, 2, "Albumin-corrected delta ratio"),
    bands=_DR_BANDS,
    reference=Reference(
        purpose="Delta ratio computed from the albumin-corrected anion gap.",
        when_to_use="High anion gap acidosis with hypoalbuminaemia.",
        formula="(ACAG − 12) / (24 − HCO₃⁻), ACAG = Na − (Cl + HCO₃⁻) + 2.5 × (4 − albumin (g/dL)).",
        citation=f"{_ALB_REF} {_DELTA_REF}",
        notes="Undefined at HCO₃⁻ = 24 mEq/L (an input error is raised).",
    ),
    examples=(Example({"sodium": 138, "chloride": 100, "bicarbonate": 16, "albumin": 2.4}, 1.75,
                      "Hand-computed: AG 22; ACAG 22 + 2.5*(4−2.4) = 26; (26−12)/(24−16) = 1.75", 0.005),),
)

CALCULATORS = [
    CALCIUM_CORRECTION, SODIUM_CORRECTION, SERUM_OSMOLALITY, FREE_WATER_DEFICIT,
    ANION_GAP, DELTA_GAP, DELTA_RATIO, ACAG, AC_DELTA_GAP, AC_DELTA_RATIO,
]
