"""Sepsis calculators: the 1992 ACCP/SCCM SIRS-sepsis-septic shock staging, qSOFA (Sepsis-3) and
the sepsis-induced coagulopathy score. The plain SIRS criteria count (MedCalc-Bench "SIRS Criteria")
belongs to the scores module, not here."""

from __future__ import annotations

from calcmate.calculators._common import flag
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference, points
from calcmate.domains import Domain

# -- SIRS, sepsis and septic shock -----------------------------------------------------------------
_SIRS = ("temp_abnormal", "hr_high", "rr_high", "wbc_abnormal")
STAGES = ("Does not meet SIRS criteria", "SIRS", "Sepsis", "Severe sepsis", "Septic shock",
          "Multiple organ dysfunction syndrome")


_STAGE_NOTES = (
    "fewer than 2 SIRS criteria", "≥ 2 SIRS criteria", "SIRS with suspected or confirmed infection",
    "sepsis with organ dysfunction, hypoperfusion or hypotension",
    "severe sepsis with hypotension despite adequate fluid resuscitation",
    "sepsis with failure of ≥ 2 organ systems",
)


def _sepsis_stage(v):
    n, got = points(v, {k: 1 for k in _SIRS})
    stage = STAGES[0]
    if n >= 2:
        stage = STAGES[1]
        if v["infection"]:
            stage = STAGES[2]
            if v["organ_dysfunction"]:
                stage = STAGES[3]
                if v["refractory_hypotension"]:
                    stage = STAGES[4]
            if v["mods"]:
                stage = STAGES[5]
    return stage, {"sirs_criteria_met": n, "criteria": got}


SEPSIS_STAGING = Calculator(
    id="sirs_sepsis_shock",
    name="SIRS, Sepsis, and Septic Shock Criteria",
    aliases=("SIRS, Sepsis, and Septic Shock Criteria", "ACCP/SCCM sepsis criteria", "Sepsis staging (SIRS to septic shock)"),
    domain=Domain.CRITICAL_CARE,
    tags=("sepsis", "infection", "ICU", "emergency", "shock"),
    inputs=(
        flag("temp_abnormal", "Temperature > 38 °C (100.4 °F) or < 36 °C (96.8 °F)", "Temp >38°C (100.4°F) or <36°C (96.8°F)",
             "Temperature"),
        flag("hr_high", "Heart rate > 90", "Heart rate >90", "Heart rate"),
        flag("rr_high", "Respiratory rate > 20 or PaCO₂ < 32 mmHg", "Respiratory rate >20 or PaCO₂ <32 mm Hg",
             "Respiratory rate"),
        flag("wbc_abnormal", "WBC > 12,000/mm³, < 4,000/mm³ or > 10% bands", "WBC >12,000/mm³, <4,000/mm³, or >10% bands",
             "White blood cell count"),
        flag("infection", "Suspected or present source of infection", "Suspected or present source of infection",
             "Sepsis criteria", optional=True, help="Default no."),
        flag("organ_dysfunction", "Signs of organ dysfunction, hypoperfusion or hypotension (e.g. lactic acidosis, "
             "oliguria, acute altered mental status, SBP < 90 or drop ≥ 40 mmHg)", "Severe sepsis criteria",
             "Organ dysfunction", optional=True, help="Default no."),
        flag("refractory_hypotension", "Hypotension despite adequate fluid resuscitation", "Septic shock criteria",
             "Severe sepsis with hypotension, despite adequate fluid resuscitation", optional=True, help="Default no."),
        flag("mods", "Multiple organ dysfunction syndrome (altered function of ≥ 2 organs requiring intervention)",
             "Multiple organ dysfunction syndrome", "MODS", optional=True, help="Default no."),
    ),
    compute=_sepsis_stage,
    output=Output("category", None, None, "Stage"),
    bands=tuple(Band(f"{s}: {d}", match=s) for s, d in zip(STAGES, _STAGE_NOTES)),
    reference=Reference(
        purpose="Stages the 1992 sepsis continuum: SIRS, sepsis, severe sepsis, septic shock, MODS.",
        when_to_use="Patients with suspected infection or systemic inflammation, where the 1992/2001 definitions are used "
        "(many trials and order sets); Sepsis-3 (2016) replaced them with SOFA-based definitions.",
        formula="SIRS = ≥ 2 of: temperature > 38 or < 36 °C; HR > 90; RR > 20 or PaCO₂ < 32 mmHg; WBC > 12,000 or < 4,000 "
        "/mm³ or > 10% bands. Sepsis = SIRS + suspected/confirmed infection. Severe sepsis = sepsis + organ dysfunction, "
        "hypoperfusion or hypotension. Septic shock = severe sepsis + hypotension despite adequate fluid resuscitation. "
        "MODS = sepsis with altered function of ≥ 2 organs.",
        citation="Bone RC, Balk RA, Cerra FB, et al. Definitions for sepsis and organ failure and guidelines for the use "
        "of innovative therapies in sepsis. The ACCP/SCCM Consensus Conference Committee. Chest. 1992;101(6):1644-1655.",
        notes="Stages are cumulative: a later stage requires the earlier ones (e.g. refractory hypotension without "
        "infection stays SIRS). The later-stage flags default to no. This is the staging tool; the bare SIRS count is "
        "MedCalc-Bench's 'SIRS Criteria' calculator.",
    ),
    examples=(
        Example({"temp_abnormal": True, "hr_high": True, "rr_high": False, "wbc_abnormal": False, "infection": True},
                "Sepsis", "Bone 1992 definitions: 2 SIRS criteria + infection"),
        Example({"temp_abnormal": True, "hr_high": True, "rr_high": True, "wbc_abnormal": True, "infection": True,
                 "organ_dysfunction": True, "refractory_hypotension": True}, "Septic shock",
                "Bone 1992 definitions: severe sepsis with fluid-refractory hypotension"),
        Example({"temp_abnormal": True, "hr_high": False, "rr_high": False, "wbc_abnormal": False, "infection": True},
                "Does not meet SIRS criteria", "Bone 1992 definitions: one SIRS criterion"),
    ),
)

# -- qSOFA -----------------------------------------------------------------------------------------
_QSOFA = {"altered_mentation": 1, "rr_22": 1, "sbp_100": 1}

QSOFA = Calculator(
    id="qsofa",
    name="qSOFA (Quick SOFA) Score for Sepsis",
    aliases=("qSOFA (Quick SOFA) Score for Sepsis", "qSOFA", "Quick SOFA"),
    domain=Domain.CRITICAL_CARE,
    tags=("sepsis", "infection", "emergency", "ward", "prognosis"),
    inputs=(
        flag("altered_mentation", "Altered mental status (GCS < 15)", "Altered mental status", "Altered mentation"),
        flag("rr_22", "Respiratory rate ≥ 22/min", "Respiratory rate ≥22", "Respiratory rate"),
        flag("sbp_100", "Systolic blood pressure ≤ 100 mmHg", "Systolic blood pressure ≤100", "Systolic BP"),
    ),
    compute=lambda v: points(v, _QSOFA),
    output=Output("integer", "points", None, "qSOFA"),
    bands=(
        Band("Not high risk (qSOFA < 2); keep monitoring if sepsis is suspected", 0, 2),
        Band("High risk (qSOFA ≥ 2): 3- to 14-fold higher in-hospital mortality; assess for organ dysfunction", 2, None),
    ),
    reference=Reference(
        purpose="Bedside prompt identifying patients with suspected infection at high risk of poor outcome outside the ICU.",
        when_to_use="Adults with suspected infection outside the ICU (ward, emergency department).",
        formula="One point each: altered mentation (GCS < 15); respiratory rate ≥ 22/min; systolic BP ≤ 100 mmHg. Total 0-3.",
        interpretation="≥ 2 points: high risk of in-hospital death or prolonged ICU stay (AUROC 0.81 outside ICU).",
        citation="Seymour CW, Liu VX, Iwashyna TJ, et al. Assessment of clinical criteria for sepsis: for the Third "
        "International Consensus Definitions for Sepsis and Septic Shock (Sepsis-3). JAMA. 2016;315(8):762-774.",
        notes="qSOFA is a risk prompt, not a diagnostic criterion for sepsis (Surviving Sepsis 2021 advises against using "
        "it alone as a screening tool).",
    ),
    examples=(
        Example({"altered_mentation": True, "rr_22": True, "sbp_100": False}, 2, "Seymour 2016: two criteria"),
        Example({"altered_mentation": False, "rr_22": False, "sbp_100": True}, 1, "Seymour 2016: one criterion"),
    ),
)

# -- Sepsis-induced coagulopathy -------------------------------------------------------------------
def _sic(v):
    plt, inr, sofa = v["platelets"], v["inr"], v["sofa4"]
    pts = {
        "platelets": 0 if plt >= 150 else 1 if plt >= 100 else 2,
        "inr": 0 if inr <= 1.2 else 1 if inr <= 1.4 else 2,
        "sofa": min(sofa, 2),
    }
    total = sum(pts.values())
    return total, {"points": pts, "sic": total >= 4 and pts["platelets"] + pts["inr"] > 2}


SIC = Calculator(
    id="sic_score",
    name="Sepsis-Induced Coagulopathy (SIC) Score",
    aliases=("Sepsis-Induced Coagulopathy (SIC) Score", "SIC score", "Sepsis-induced coagulopathy"),
    domain=Domain.CRITICAL_CARE,
    tags=("sepsis", "coagulation", "DIC", "hematology", "ICU"),
    inputs=(
        Input("inr", "PT-INR", min=0.5, max=20, aliases=("INR", "PT-INR", "prothrombin time INR")),
        Input("platelets", "Platelet count", unit="10^9/L", analyte="count", min=0, max=2000,
              aliases=("Platelet count, cells x 10^9/L", "Platelet count", "platelets")),
        Input("sofa4", "SOFA score (sum of respiratory, cardiovascular, hepatic, renal components)", type="integer",
              min=0, max=16,
              aliases=("Total SOFA score (sum of respiratory, cardiovascular, hepatic, renal components)", "SOFA score"),
              help="Sum of the four SOFA items (respiratory, cardiovascular, hepatic, renal), 0-16; scored 0, 1 or ≥ 2."),
    ),
    compute=_sic,
    output=Output("integer", "points", None, "SIC score"),
    bands=(
        Band("SIC unlikely (< 4)", None, 4),
        Band("SIC likely (≥ 4), provided platelet + INR points > 2 (see details 'sic')", 4, None),
    ),
    reference=Reference(
        purpose="Identifies sepsis-induced coagulopathy, an early stage of sepsis-associated DIC that may benefit from "
        "anticoagulant therapy.",
        when_to_use="Patients with sepsis (Sepsis-3) and suspected coagulopathy.",
        formula="Platelets (×10⁹/L): ≥ 150 → 0, 100-149 → 1, < 100 → 2. PT-INR: ≤ 1.2 → 0, > 1.2-1.4 → 1, > 1.4 → 2. "
        "Four-item SOFA (respiratory + cardiovascular + hepatic + renal): 0 → 0, 1 → 1, ≥ 2 → 2. Total 0-6.",
        interpretation="SIC: total ≥ 4 with platelet + INR points > 2 (ISTH 2019 endorsed).",
        citation="Iba T, Nisio MD, Levy JH, Kitamura N, Thachil J. New criteria for sepsis-induced coagulopathy (SIC) "
        "following the revised sepsis definition: a retrospective analysis of a nationwide survey. BMJ Open. "
        "2017;7(9):e017046; Iba T, Levy JH, Warkentin TE, et al. Diagnosis and management of sepsis-induced "
        "coagulopathy and disseminated intravascular coagulation. J Thromb Haemost. 2019;17(11):1989-1994.",
        notes="The SOFA item is the four-organ SOFA sum, not the full six-organ score, and contributes at most 2 points.",
    ),
    examples=(
        Example({"inr": 1.5, "platelets": 95, "sofa4": 1}, 5,
                "Hand-computed per the Iba 2017 scoring table: platelets 95 (< 100) 2 + INR 1.5 (> 1.4) 2 + "
                "four-item SOFA 1 → 1 = 5, with coagulation points 4 > 2: SIC"),
        Example({"inr": 1.3, "platelets": 120, "sofa4": 1}, 3, "Iba 2017 scoring table: 1 + 1 + 1"),
    ),
)

CALCULATORS = [SEPSIS_STAGING, QSOFA, SIC]
