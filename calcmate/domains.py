"""The four MedMCP-Calc clinical domains, spelled as in the benchmark's task_category."""

from __future__ import annotations

from enum import Enum


class Domain(str, Enum):
    MEDICINE = "Medicine & Organ Systems"
    CRITICAL_CARE = "Emergency, Critical Care & Perioperative"
    SPECIAL_POPULATIONS = "Special Populations & General Tools"
    NEUROLOGY = "Neurology & Mental Health"

    @classmethod
    def from_category(cls, task_category: str) -> "Domain":
        """Parse "Clinical Medicine / <domain> / <specialty>" (the MedMCP-Calc task_category)."""
        parts = [p.strip() for p in task_category.split("/")]
        for p in parts:
            for d in cls:
                if p.lower() == d.value.lower():
                    return d
        raise ValueError(f"task_category {task_category!r} names none of the domains {[d.value for d in cls]}")
