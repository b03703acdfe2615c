"""Clinical metadata per calculator: which way its output means a sicker patient (polarity) and the
patients it is validated for (populations).

The synthesizer needs both to compose clinically coherent tasks: a branch is only taken towards the
worse side of a published threshold, and no calculator is applied outside its population (no adult
BMI bands on a toddler, no eGFR equation in pregnancy). The data lives in
``data/clinical_meta.yaml`` and is read once, on first use, so importing the registry stays fast.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, model_validator

DEFAULT_META = Path(__file__).with_name("data") / "clinical_meta.yaml"

Polarity = Literal["higher_worse", "lower_worse", "u_shaped", "categorical", "none"]
PopulationClass = Literal["adult", "paediatric", "neonatal", "pregnancy"]
POPULATIONS: tuple[str, ...] = ("adult", "paediatric", "neonatal", "pregnancy")


class CalcMeta(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    polarity: Polarity
    populations: tuple[PopulationClass, ...]
    normal: tuple[float, float] | None = None  # u_shaped: the reference range
    order: tuple[str, ...] = ()  # categorical: comparable labels, best first

    @model_validator(mode="after")
    def _check(self) -> "CalcMeta":
        if not self.populations:
            raise ValueError("populations must name at least one of " + ", ".join(POPULATIONS))
        if (self.polarity == "u_shaped") != (self.normal is not None):
            raise ValueError("'normal: [lo, hi]' is required for u_shaped polarity and only for it")
        if self.normal is not None and not self.normal[0] < self.normal[1]:
            raise ValueError(f"normal range {self.normal} needs lo < hi")
        if self.order and self.polarity != "categorical":
            raise ValueError("'order' only applies to categorical polarity")
        return self

    def worse_side(self, op: str, threshold: float | str) -> Literal["true", "false"] | None:
        """Which side of ``value <op> threshold`` is the sicker patient; None when polarity cannot say.

        For u_shaped outputs the threshold must lie at or beyond an end of the normal range, and for
        categorical ones the label must be the best or the worst of ``order``.
        """
        if op == "==":
            if self.polarity != "categorical" or str(threshold) not in self.order:
                return None
            if str(threshold) == self.order[-1]:
                return "true"
            return "false" if str(threshold) == self.order[0] else None
        t = float(threshold)
        high_is_worse: bool | None
        if self.polarity == "higher_worse":
            high_is_worse = True
        elif self.polarity == "lower_worse":
            high_is_worse = False
        elif self.polarity == "u_shaped" and self.normal is not None:
            lo, hi = self.normal
            high_is_worse = True if t >= hi else False if t <= lo else None
        else:
            high_is_worse = None
        if high_is_worse is None:
            return None
        true_is_high = op in (">=", ">")
        return "true" if true_is_high == high_is_worse else "false"


class MetaFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    anchors: dict[str, list[str]] = {}  # YAML shorthands only
    calculators: dict[str, CalcMeta]


@lru_cache(maxsize=None)
def load_meta(path: str | None = None) -> dict[str, CalcMeta]:
    """Every calculator's metadata, by registry id (validated; raises ValueError naming the entry)."""
    p = Path(path) if path else DEFAULT_META
    data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    try:
        return dict(MetaFile.model_validate(data).calculators)
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None


def meta(calc_id: str) -> CalcMeta:
    """The metadata of one calculator (KeyError names the file to extend)."""
    try:
        return load_meta()[calc_id]
    except KeyError:
        raise KeyError(f"calculator {calc_id!r} has no entry in {DEFAULT_META}; add its polarity and populations") from None


def polarity(calc_id: str) -> Polarity:
    return meta(calc_id).polarity


def populations(calc_id: str) -> tuple[str, ...]:
    return meta(calc_id).populations


def applies(calc_id: str, population: str) -> bool:
    """Whether the calculator is validated for this population class."""
    return population in meta(calc_id).populations
