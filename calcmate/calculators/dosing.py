"""Drug-equivalence calculators: corticosteroid dose conversion and daily morphine milligram
equivalents (MME)."""

from __future__ import annotations

from calcmate.calculators.spec import Band, Calculator, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain

# Equivalent doses (mg) with the same glucocorticoid effect (Liu et al. 2013, Table 1).
STEROID_EQUIVALENT_MG: dict[str, float] = {
    "Betamethasone IV": 0.75,
    "Cortisone PO": 25.0,
    "Dexamethasone IV": 0.75,
    "Dexamethasone PO": 0.75,
    "Hydrocortisone IV": 20.0,
    "Hydrocortisone PO": 20.0,
    "MethylPrednisoLONE IV": 4.0,
    "MethylPrednisoLONE PO": 4.0,
    "PrednisoLONE PO": 5.0,
    "PredniSONE PO": 5.0,
    "Triamcinolone IV": 4.0,
}

def _steroid_choices() -> tuple[Choice, ...]:
    """One choice per drug and route; a drug with a single route also answers to its bare name."""
    drugs = [n.split()[0] for n in STEROID_EQUIVALENT_MG]
    return tuple(
        Choice(name, name, (name.split()[0],) if drugs.count(name.split()[0]) == 1 else ())
        for name in STEROID_EQUIVALENT_MG
    )


_STEROID_CHOICES = _steroid_choices()


def _steroid(v):
    src, dst = v["from_steroid"], v["to_steroid"]
    pred_eq = v["dose"] / STEROID_EQUIVALENT_MG[src] * 5.0
    return v["dose"] / STEROID_EQUIVALENT_MG[src] * STEROID_EQUIVALENT_MG[dst], {"prednisone_equivalent_mg": pred_eq}


STEROID_CONVERSION = Calculator(
    id="steroid_conversion",
    name="Steroid Conversion Calculator",
    aliases=("Corticosteroid conversion", "Steroid equivalence", "Glucocorticoid dose conversion"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=24,
    tags=("pharmacology", "endocrine", "drug dosing"),
    inputs=(
        Input("from_steroid", "Current steroid", type="choice", choices=_STEROID_CHOICES,
              aliases=("input steroid", "current steroid")),
        Input("dose", "Current dose", unit="mg", min=0.01, max=20000, aliases=("dose", "input dose")),
        Input("to_steroid", "Target steroid", type="choice", choices=_STEROID_CHOICES,
              aliases=("target steroid", "convert to")),
    ),
    compute=_steroid,
    output=Output("decimal", "mg", 2, "Equivalent dose"),
    reference=Reference(
        purpose="Equivalent dose of another systemic glucocorticoid (anti-inflammatory potency).",
        when_to_use="Switching glucocorticoids or routes; not for mineralocorticoid equivalence.",
        formula="Target dose = dose × (equivalent mg of target / equivalent mg of current). Equivalent doses: "
        "betamethasone 0.75, cortisone 25, dexamethasone 0.75, hydrocortisone 20, methylprednisolone 4, "
        "prednisolone 5, prednisone 5, triamcinolone 4 mg.",
        citation="Liu D, Ahmet A, Ward L, et al. A practical guide to the monitoring and management of the "
        "complications of systemic corticosteroid therapy. Allergy Asthma Clin Immunol. 2013;9(1):30.",
        notes="Equivalences are approximate (durations of action differ). MedCalc-Bench v1.0 labels used a rounded "
        "factor (3.999 for prednisone→hydrocortisone); results agree within its ±5%.",
    ),
    examples=(
        Example({"from_steroid": "PredniSONE PO", "dose": 40, "to_steroid": "Dexamethasone PO"}, 6.0,
                "Liu 2013 table: 40 mg prednisone × 0.75/5 = 6 mg dexamethasone", 0.005),
        Example({"from_steroid": "Hydrocortisone IV", "dose": 100, "to_steroid": "MethylPrednisoLONE IV"}, 20.0,
                "Liu 2013 table: 100 mg hydrocortisone × 4/20 = 20 mg methylprednisolone", 0.005),
    ),
)

# CDC 2022 MME conversion factors (per mg; fentanyl patch per mcg/hr; buccal fentanyl per mcg).
MME_FACTORS: dict[str, tuple[str, float, str]] = {
    # key: (label as MedCalc-Bench spells it, factor, dose unit)
    "codeine": ("Codeine", 0.15, "mg"),
    "fentanyl_buccal": ("FentaNYL buccal", 0.13, "mcg"),
    "fentanyl_patch": ("FentANYL patch", 2.4, "mcg/hr"),
    "hydrocodone": ("HYDROcodone", 1.0, "mg"),
    "hydromorphone": ("HYDROmorphone", 5.0, "mg"),
    "methadone": ("Methadone", 4.7, "mg"),
    "morphine": ("Morphine", 1.0, "mg"),
    "oxycodone": ("OxyCODONE", 1.5, "mg"),
    "oxymorphone": ("OxyMORphone", 3.0, "mg"),
    "tapentadol": ("Tapentadol", 0.4, "mg"),
    "tramadol": ("TraMADol", 0.2, "mg"),
}


def _mme_inputs() -> tuple[Input, ...]:
    out: list[Input] = []
    for key, (label, _, unit) in MME_FACTORS.items():
        out.append(Input(f"{key}_dose", f"{label} dose ({unit} per dose)", min=0, max=10000, optional=True, default=0.0,
                         aliases=(f"{label} Dose", f"{label} dose"), help=f"{unit} per dose; default 0 (not taken)"))
        out.append(Input(f"{key}_doses_per_day", f"{label} doses per day", min=0, max=48, optional=True, default=0.0,
                         aliases=(f"{label} Dose Per Day", f"{label} doses per day"), help="default 0"))
    return tuple(out)


def _mme(v):
    per_drug = {}
    for key, (_, factor, _) in MME_FACTORS.items():
        if v[f"{key}_dose"] and v[f"{key}_doses_per_day"]:
            per_drug[key] = v[f"{key}_dose"] * v[f"{key}_doses_per_day"] * factor
    return sum(per_drug.values()), {"mme_per_drug": per_drug}


MME = Calculator(
    id="mme",
    name="Morphine Milligram Equivalents (MME) Calculator",
    aliases=("MME", "Morphine Milligram Equivalents", "Morphine equivalent daily dose", "MEDD"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=49,
    tags=("pharmacology", "pain", "opioids", "drug safety"),
    inputs=_mme_inputs(),
    compute=_mme,
    output=Output("decimal", "MME/day", 1, "Total daily MME"),
    bands=(Band("<50 MME/day", None, 50), Band("50-89 MME/day: reassess benefits and risks", 50, 90),
           Band("≥90 MME/day: avoid or carefully justify; consider naloxone", 90, None)),
    reference=Reference(
        purpose="Total daily opioid dose in morphine milligram equivalents, a marker of overdose risk.",
        when_to_use="Patients on one or more opioids; not for converting between opioids (incomplete cross-tolerance).",
        formula="MME/day = Σ dose per administration × doses per day × factor. CDC 2022 factors: codeine 0.15, "
        "fentanyl buccal/sublingual 0.13 (per mcg), fentanyl transdermal 2.4 (per mcg/hr), hydrocodone 1, "
        "hydromorphone 5, methadone 4.7, morphine 1, oxycodone 1.5, oxymorphone 3, tapentadol 0.4, tramadol 0.2.",
        citation="Dowell D, Ragan KR, Jones CM, Baldwin GT, Chou R. CDC Clinical Practice Guideline for Prescribing "
        "Opioids for Pain — United States, 2022. MMWR Recomm Rep. 2022;71(3):1-95.",
        notes="MedCalc-Bench uses the same CDC 2022 factors, but labels every dose 'mg', including fentanyl patches "
        "(mcg/hr) and buccal fentanyl (mcg); the number is read in the drug's own unit. Buprenorphine has no CDC MME "
        "factor and is not included.",
    ),
    examples=(
        Example({"oxycodone_dose": 10, "oxycodone_doses_per_day": 4}, 60.0,
                "CDC 2022 factor table: oxycodone 10 mg × 4/day × 1.5 = 60 MME/day", 0.05),
        Example({"fentanyl_patch_dose": 25, "fentanyl_patch_doses_per_day": 1, "morphine_dose": 15,
                 "morphine_doses_per_day": 2}, 90.0,
                "CDC 2022 factor table: fentanyl 25 mcg/hr × 2.4 = 60, + morphine 30 mg = 90 MME/day", 0.05),
    ),
)

CALCULATORS = [STEROID_CONVERSION, MME]
