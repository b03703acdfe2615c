"""The calculator registry: every calculator, looked up by id, alias or domain.

Calculator modules live beside this file; each exposes ``CALCULATORS`` (a list of Calculator)
and optionally ``BUNDLES`` (a name that covers several calculators, e.g. "BMI Calculator
(Body Mass Index and BSA)" -> ("bmi", "bsa")). They are discovered by import, so adding a
calculator is adding it to a module's list.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Iterator
from functools import lru_cache

from calcmate.calculators.spec import Calculator, normalize_name
from calcmate.domains import Domain

_SKIP = {"spec", "registry", "__init__"}


class UnknownCalculatorError(KeyError):
    def __init__(self, name: str, suggestions: list[str]):
        self.name, self.suggestions = name, suggestions
        hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"no calculator named {name!r}{hint}")

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return self.args[0]


class Registry:
    def __init__(self, calculators: Iterable[Calculator], bundles: dict[str, tuple[str, ...]] | None = None):
        self._by_id: dict[str, Calculator] = {}
        self._by_name: dict[str, str] = {}
        self._bundles: dict[str, tuple[str, ...]] = {}
        for c in calculators:
            self.add(c)
        for name, ids in (bundles or {}).items():
            self.add_bundle(name, ids)

    def add(self, calc: Calculator) -> None:
        if calc.id in self._by_id:
            raise ValueError(f"duplicate calculator id {calc.id!r}")
        self._by_id[calc.id] = calc
        for n in (calc.id, calc.name, *calc.aliases):
            key = normalize_name(n)
            other = self._by_name.get(key)
            if other is not None and other != calc.id:
                raise ValueError(f"alias {n!r} of {calc.id!r} already names {other!r}")
            self._by_name[key] = calc.id

    def add_bundle(self, name: str, ids: tuple[str, ...]) -> None:
        missing = [i for i in ids if i not in self._by_id]
        if missing:
            raise ValueError(f"bundle {name!r} names unknown calculators {missing}")
        self._bundles[normalize_name(name)] = tuple(ids)

    # -- lookup -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Calculator]:
        return iter(self._by_id.values())

    def __contains__(self, name: str) -> bool:
        k = normalize_name(name)
        return k in self._by_name or k in self._bundles

    def get(self, name: str) -> Calculator:
        """By id or any alias (case-, punctuation- and Unicode-insensitive).

        A bundle name resolves to its first (primary) calculator; use ``resolve`` for all of them.
        """
        return self.resolve(name)[0]

    def resolve(self, name: str) -> tuple[Calculator, ...]:
        """Every calculator a name covers: one, or several for a bundle name."""
        k = normalize_name(name)
        if k in self._by_name:
            return (self._by_id[self._by_name[k]],)
        if k in self._bundles:
            return tuple(self._by_id[i] for i in self._bundles[k])
        raise UnknownCalculatorError(name, self.suggest(name))

    def find(self, name: str) -> Calculator | None:
        try:
            return self.get(name)
        except UnknownCalculatorError:
            return None

    def suggest(self, name: str, limit: int = 3, cutoff: float = 60.0) -> list[str]:
        from rapidfuzz import fuzz, process

        names = list(self._by_name) + list(self._bundles)
        hits = process.extract(normalize_name(name), names, scorer=fuzz.token_set_ratio, limit=limit * 3)
        out: list[str] = []
        for key, score, _ in hits:
            if score < cutoff:
                continue
            ids = self._bundles.get(key) or (self._by_name[key],)
            for i in ids:
                if self._by_id[i].name not in out:
                    out.append(self._by_id[i].name)
        return out[:limit]

    def by_domain(self, domain: Domain | str) -> list[Calculator]:
        d = Domain(domain)
        return [c for c in self if c.domain == d]

    def by_medcalc_id(self, medcalc_id: int) -> Calculator:
        for c in self:
            if c.medcalc_bench_id == int(medcalc_id):
                return c
        raise UnknownCalculatorError(f"MedCalc-Bench id {medcalc_id}", [])

    def names(self) -> dict[str, str]:
        """Every normalised name -> calculator id (bundles excluded)."""
        return dict(self._by_name)

    @property
    def bundles(self) -> dict[str, tuple[str, ...]]:
        return dict(self._bundles)


@lru_cache(maxsize=1)
def registry() -> Registry:
    """The process-wide registry of every calculator module in this package."""
    import calcmate.calculators as pkg

    calcs: list[Calculator] = []
    bundles: dict[str, tuple[str, ...]] = {}
    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if mod.name in _SKIP or mod.name.startswith("_"):
            continue
        m = importlib.import_module(f"{pkg.__name__}.{mod.name}")
        calcs.extend(getattr(m, "CALCULATORS", []))
        bundles.update(getattr(m, "BUNDLES", {}))
    return Registry(calcs, bundles)


def get(name: str) -> Calculator:
    return registry().get(name)


def lookup(name: str) -> Calculator:
    return registry().get(name)
