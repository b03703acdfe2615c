"""Hepatology procedures: mortality risk after transjugular intrahepatic portosystemic shunt (TIPS)."""

from __future__ import annotations

from calcmate.calculators._common import flag
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference
from calcmate.domains import Domain


def _emory(v):
    pts = {
        "emergent_tips": 2 if v["emergent"] else 0,
        "alt_over_100": 1 if v["alt"] > 100 else 0,
        "bilirubin_over_3": 1 if v["bilirubin"] > 3.0 else 0,
        "pre_tips_encephalopathy": 1 if v["encephalopathy"] else 0,
    }
    return sum(pts.values()), pts


EMORY_TIPS = Calculator(
    id="emory_tips",
    name="Emory Model (TIPSS)",
    aliases=("Emory Model", "Emory score", "Emory TIPS score", "Emory Model for TIPS"),
    domain=Domain.MEDICINE,
    inputs=(
        flag("emergent", "Emergent TIPS", "Emergent TIPS", "Urgent TIPS", "Emergency TIPS",
             help="TIPS placed emergently (e.g. for uncontrolled variceal bleeding)."),
        Input("alt", "Pre-TIPS ALT", unit="U/L", min=0, max=20000, aliases=("ALT", "Pre-TIPS ALT", "Alanine aminotransferase")),
        Input("bilirubin", "Pre-TIPS total bilirubin", unit="mg/dL", analyte="bilirubin", min=0, max=80,
              aliases=("Bilirubin", "Total bilirubin", "Pre-TIPS bilirubin")),
        flag("encephalopathy", "Pre-TIPS encephalopathy", "Pre-TIPS encephalopathy", "Hepatic encephalopathy",
             help="Encephalopathy before TIPS not related to bleeding."),
    ),
    compute=_emory,
    output=Output("integer", "points", None, "Emory score"),
    bands=(
        Band("Low risk (0)", None, 1),
        Band("Medium risk (1-3)", 1, 4),
        Band("High risk (4-5): TIPS may be inappropriate, especially if transplant is not an option", 4, None),
    ),
    tags=("hepatology", "cirrhosis", "portal hypertension", "procedure"),
    reference=Reference(
        purpose="Predicts mortality after TIPS in patients with cirrhosis.",
        when_to_use="Patients with cirrhosis being considered for TIPS (variceal bleeding, refractory ascites).",
        formula="| Criterion | Points |\n|---|---|\n| Emergent TIPS | 2 |\n| Pre-TIPS ALT >100 U/L | 1 |\n"
        "| Pre-TIPS bilirubin >3.0 mg/dL | 1 |\n| Pre-TIPS encephalopathy (not bleeding-related) | 1 |",
        citation="Chalasani N, Clark WS, Martin LG, et al. Determinants of mortality in patients with advanced "
        "cirrhosis after transjugular intrahepatic portosystemic shunting. Gastroenterology. 2000;118(1):138-144.",
        notes="Risk groups (0 low, 1-3 medium, 4-5 high) as given by the derivation study and MDCalc; verified "
        "against secondary sources only (the primary paper's text was not available here).",
    ),
    examples=(
        Example({"emergent": True, "alt": 150, "bilirubin": 4.0, "encephalopathy": False}, 4,
                "Chalasani 2000 points table: emergent 2 + ALT 1 + bilirubin 1 = 4 (hand-computed)"),
        Example({"emergent": False, "alt": 100, "bilirubin": 3.0, "encephalopathy": False}, 0,
                "Chalasani 2000 thresholds are strict (>100, >3.0): boundary values score 0 (hand-computed)"),
    ),
)

CALCULATORS = [EMORY_TIPS]
