"""Pharmacology: converting a daily opioid dose between drugs and routes by equianalgesic ratios."""

from __future__ import annotations

from calcmate.calculators.spec import Calculator, CalculatorInputError, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain

# Equianalgesic doses (mg) ≈ morphine 10 mg parenteral = 30 mg oral (American Pain Society 2008 table).
EQUIANALGESIC_MG: dict[str, tuple[str, float]] = {
    "morphine_po": ("Morphine PO", 30),
    "morphine_iv": ("Morphine IV", 10),
    "oxycodone_po": ("Oxycodone PO", 20),
    "hydrocodone_po": ("Hydrocodone PO", 30),
    "hydromorphone_po": ("Hydromorphone PO", 7.5),
    "hydromorphone_iv": ("Hydromorphone IV", 1.5),
    "oxymorphone_po": ("Oxymorphone PO", 10),
    "oxymorphone_iv": ("Oxymorphone IV", 1),
    "codeine_po": ("Codeine PO", 200),
    "codeine_iv": ("Codeine IV", 130),
    "meperidine_po": ("Meperidine PO", 300),
    "meperidine_iv": ("Meperidine IV", 100),
    "fentanyl_iv": ("Fentanyl IV", 0.1),
    "levorphanol_po": ("Levorphanol PO", 4),
    "levorphanol_iv": ("Levorphanol IV", 2),
}


def _drug_choices() -> tuple[Choice, ...]:
    out = []
    for key, (label, _) in EQUIANALGESIC_MG.items():
        drug, route = label.split()
        words = {"PO": ("oral", "by mouth", "PO"), "IV": ("intravenous", "parenteral", "IV", "IM", "SC")}[route]
        aliases = tuple(f"{drug} {w}" for w in words) + tuple(f"{w} {drug}" for w in words) + tuple(f"{drug} ({w})" for w in words)
        if key == "morphine_po":
            aliases += ("Morphine", "MS Contin", "Oral morphine")
        elif key == "oxycodone_po":
            aliases += ("Oxycodone", "OxyContin", "Percocet")
        elif key == "hydrocodone_po":
            aliases += ("Hydrocodone", "Norco", "Vicodin")
        elif key == "hydromorphone_iv":
            aliases += ("Dilaudid IV",)
        elif key == "hydromorphone_po":
            aliases += ("Dilaudid PO", "Dilaudid")
        elif key == "fentanyl_iv":
            aliases += ("Fentanyl", "Fentanyl IV push", "Fentanyl infusion")
        elif key == "codeine_po":
            aliases += ("Codeine",)
        elif key == "oxymorphone_po":
            aliases += ("Oxymorphone", "Opana")
        out.append(Choice(label, key, aliases))
    return tuple(out)


_DRUGS = _drug_choices()


def _convert(v):
    src_label, src_eq = EQUIANALGESIC_MG[v["from_drug"]]
    dst_label, dst_eq = EQUIANALGESIC_MG[v["to_drug"]]
    if v["from_drug"] == v["to_drug"]:
        raise CalculatorInputError("opioid_conversion", "to_drug", "is the same drug and route as from_drug")
    morphine_iv_eq = v["daily_dose"] * 10 / src_eq
    equi = v["daily_dose"] * dst_eq / src_eq
    reduced = equi * (1 - v["cross_tolerance_reduction"] / 100)
    return reduced, {
        "equianalgesic_dose_mg": round(equi, 3),
        "oral_morphine_equivalent_mg": round(morphine_iv_eq * 3, 2),
        "reduction_percent": v["cross_tolerance_reduction"],
        "ratio": f"{src_eq:g} mg {src_label} ≈ {dst_eq:g} mg {dst_label}",
    }


OPIOID_CONVERSION = Calculator(
    id="opioid_conversion",
    name="Opiate Conversion Calculator",
    aliases=("Opioid Conversion Calculator", "Opioid conversion", "Equianalgesic opioid conversion", "Opiate conversion"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("from_drug", "Current opioid and route", type="choice", choices=_DRUGS,
              aliases=("Current opioid", "Converting from", "From", "Current opiate", "Opioid")),
        Input("daily_dose", "Current total daily dose", unit="mg", min=0.001, max=20000,
              aliases=("Total daily dose", "Daily dose", "Current dose", "Dose", "Total 24-hour dose"),
              help="Total dose over 24 hours (fentanyl IV may be given in mcg)."),
        Input("to_drug", "New opioid and route", type="choice", choices=_DRUGS,
              aliases=("New opioid", "Converting to", "To", "Target opioid", "Desired opioid")),
        Input("cross_tolerance_reduction", "Reduction for incomplete cross-tolerance", unit="percent", min=0, max=90,
              optional=True, default=0.0,
              aliases=("Dose reduction", "Reduction for incomplete cross tolerance", "Cross-tolerance reduction"),
              help="Default 0% (pure equianalgesic dose); guidelines advise reducing 25-50% when switching drugs."),
    ),
    compute=_convert,
    output=Output("decimal", "mg", 2, "New total daily dose"),
    tags=("pharmacology", "pain", "opioids", "palliative care"),
    reference=Reference(
        purpose="Converts a total daily opioid dose to the equianalgesic dose of another opioid or route.",
        when_to_use="Opioid rotation or route change (e.g. IV to oral) in opioid-tolerant patients.",
        formula="New dose = current daily dose × (equianalgesic dose of new opioid / equianalgesic dose of current "
        "opioid) × (1 − reduction %).\n\n| Opioid | Parenteral (mg) | Oral (mg) |\n|---|---|---|\n"
        "| Morphine | 10 | 30 |\n| Oxycodone | — | 20 |\n| Hydrocodone | — | 30 |\n| Hydromorphone | 1.5 | 7.5 |\n"
        "| Oxymorphone | 1 | 10 |\n| Codeine | 130 | 200 |\n| Meperidine | 100 | 300 |\n| Fentanyl | 0.1 | — |\n"
        "| Levorphanol | 2 | 4 |",
        citation="American Pain Society. Principles of Analgesic Use in the Treatment of Acute Pain and Cancer Pain. "
        "6th ed. Glenview, IL: American Pain Society; 2008 (equianalgesic dose table).",
        notes="Methadone, transdermal fentanyl, buprenorphine and tramadol are not linear with morphine and are not "
        "converted here. Ratios are approximate; reduce the calculated dose 25-50% for incomplete cross-tolerance "
        "and titrate. MME for risk assessment (CDC) is a separate calculator.",
    ),
    examples=(
        Example({"from_drug": "Morphine PO", "daily_dose": 60, "to_drug": "Hydromorphone PO"}, 15.0,
                "APS 2008 table: 60 mg oral morphine × 7.5/30 = 15 mg oral hydromorphone", 0.01),
        Example({"from_drug": "Morphine IV", "daily_dose": 20, "to_drug": "Oxycodone PO", "cross_tolerance_reduction": 25},
                30.0, "APS 2008 table: 20 mg IV morphine × 20/10 = 40 mg oxycodone, minus 25% = 30 mg (hand-computed)", 0.01),
    ),
)

def _liquid(v):
    dose = v["weight"] * v["dose_mg_per_kg"]
    if v["max_dose"] is not None:
        dose = min(dose, v["max_dose"])
    return dose / v["concentration"], {"dose_mg": round(dose, 3)}


LIQUID_DOSING = Calculator(
    id="weight_based_liquid_dosing",
    name="Weight-based liquid medication dosing",
    aliases=("Weight-based liquid dosing", "Liquid medication dose volume", "Pediatric liquid dose calculator"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("weight", "Weight", unit="kg", min=0.2, max=500, aliases=("Weight", "Patient weight", "Body weight")),
        Input("dose_mg_per_kg", "Dose", unit="mg/kg", min=0.0001, max=1000, aliases=("Dose", "Dose (mg/kg)", "Prescribed dose")),
        Input("concentration", "Concentration of liquid", unit="mg/mL", min=0.001, max=1000,
              aliases=("Concentration", "Concentration (mg/mL)", "Liquid concentration", "Strength")),
        Input("max_dose", "Maximum single dose", unit="mg", min=0.001, max=100000, optional=True,
              aliases=("Maximum dose", "Max dose"), help="Optional cap on the dose in mg; none by default."),
    ),
    compute=_liquid,
    output=Output("decimal", "mL", 2, "Volume per dose"),
    tags=("pharmacology", "pediatrics", "dosing"),
    reference=Reference(
        purpose="Volume of a liquid formulation that delivers a weight-based dose.",
        when_to_use="Weight-based dosing of oral or IV liquids, especially in children.",
        formula="Dose (mg) = weight (kg) × dose (mg/kg), capped at the maximum dose if given; "
        "volume (mL) = dose (mg) / concentration (mg/mL).",
        citation="Institute for Safe Medication Practices. Preventing dosing errors with oral liquid medications; and "
        "standard dimensional analysis (e.g. Kliegman RM, et al. Nelson Textbook of Pediatrics, 21st ed., drug dosing).",
        notes="Give the concentration per mL: labels often state it per 5 mL (160 mg/5 mL = 32 mg/mL). Check the "
        "dose against the drug's maximum single dose.",
    ),
    examples=(
        Example({"weight": 20, "dose_mg_per_kg": 15, "concentration": 32}, 9.38,
                "Acetaminophen 15 mg/kg for 20 kg = 300 mg; 160 mg/5 mL = 32 mg/mL → 9.38 mL (hand-computed)", 0.01),
        Example({"weight": 50, "dose_mg_per_kg": 15, "concentration": 32, "max_dose": 650}, 20.31,
                "15 mg/kg × 50 kg = 750 mg capped at 650 mg → 20.31 mL (hand-computed)", 0.01),
    ),
)


CALCULATORS = [OPIOID_CONVERSION, LIQUID_DOSING]
