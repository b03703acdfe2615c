"""The scenario taxonomy: 4 domains x ~125 clinical use categories, each with registry calculators.

The data lives in ``taxonomy.yaml`` beside this file (or any file of the same shape). A category names
its clinical ``pathways`` (``pathways.yaml``), and its calculators are exactly those pathways'
calculators, so a task never mixes in scores from another specialty. A category without pathways (a
custom file) gets its explicit ``calculators`` ids plus every registry calculator whose tags or names
share one of its ``tags``. Unknown ids are skipped with one warning each,
so the taxonomy may name calculators the registry does not have yet. A category whose context names a
patient group (a newborn, an older adult, a pregnant patient) says so in ``population``; its tasks
then only combine calculators that apply to that group.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from calcmate.calculators.registry import Registry, registry
from calcmate.calculators.spec import Calculator, normalize_name
from calcmate.domains import Domain
from calcmate.synth.pathways import load_pathways
from calcmate.synth.profile import default_model

log = logging.getLogger(__name__)

DEFAULT_TAXONOMY = Path(__file__).with_name("taxonomy.yaml")


@dataclass
class Category:
    name: str
    domain: Domain
    specialty: str
    tags: tuple[str, ...] = ()
    explicit: tuple[str, ...] = ()  # registry ids named in the file
    context: str = ""
    calculators: list[str] = field(default_factory=list)  # resolved registry ids
    population: str | None = None  # a group of populations.yaml the context names (e.g. "neonate")
    pathways: tuple[str, ...] = ()  # ids of pathways.yaml; when given, they alone supply the calculators

    @property
    def task_category(self) -> str:
        """The MedMCP-Calc ``task_category`` string."""
        return f"Clinical Medicine / {self.domain.value} / {self.specialty}"


@dataclass
class Taxonomy:
    categories: list[Category]
    missing: dict[str, list[str]] = field(default_factory=dict)  # category -> unknown explicit ids

    def by_domain(self, domain: Domain | str) -> list[Category]:
        d = Domain(domain)
        return [c for c in self.categories if c.domain == d]

    def get(self, name: str) -> Category:
        key = normalize_name(name)
        for c in self.categories:
            if normalize_name(c.name) == key:
                return c
        raise KeyError(f"no taxonomy category named {name!r}")

    def usable(self, min_calculators: int = 1) -> list[Category]:
        return [c for c in self.categories if len(c.calculators) >= min_calculators]


_ENTRY_KEYS = {"name", "specialty", "tags", "calculators", "context", "population", "pathways"}


def _keywords(calc: Calculator) -> list[str]:
    return [normalize_name(x) for x in (*calc.tags, calc.name, *calc.aliases) if normalize_name(x)]


def _matches(tag: str, keywords: list[str]) -> bool:
    t = f" {tag} "
    return any(tag == k or t in f" {k} " for k in keywords)


def load_taxonomy(path: str | Path | None = None, reg: Registry | None = None) -> Taxonomy:
    """Read the taxonomy file and assign registry calculators to every category."""
    reg = reg if reg is not None else registry()
    p = Path(path) if path else DEFAULT_TAXONOMY
    data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    domains = data.get("domains")
    if not isinstance(domains, dict) or not domains:
        raise ValueError(f"{p}: taxonomy needs a non-empty 'domains' mapping")
    keywords = {c.id: _keywords(c) for c in reg}
    paths = None
    cats: list[Category] = []
    missing: dict[str, list[str]] = {}
    for dname, entries in domains.items():
        try:
            domain = Domain(dname)
        except ValueError:
            raise ValueError(f"{p}: domains.{dname!r} is not one of {[d.value for d in Domain]}") from None
        for i, e in enumerate(entries or []):
            if not isinstance(e, dict) or not e.get("name") or not e.get("specialty"):
                raise ValueError(f"{p}: domains.{dname}[{i}] needs 'name' and 'specialty'")
            unknown = set(e) - _ENTRY_KEYS
            if unknown:  # e.g. an unquoted comma in a flow mapping splits a name or context into a key
                raise ValueError(f"{p}: domains.{dname}[{i}] ({e['name']}): unknown keys {sorted(map(str, unknown))}; "
                                 f"allowed: {sorted(_ENTRY_KEYS)} (quote values that contain commas)")
            cat = Category(
                name=str(e["name"]), domain=domain, specialty=str(e["specialty"]),
                tags=tuple(normalize_name(t) for t in e.get("tags") or () if normalize_name(t)),
                explicit=tuple(str(x) for x in e.get("calculators") or ()),
                context=str(e.get("context") or ""),
                population=str(e["population"]) if e.get("population") else None,
                pathways=tuple(str(x) for x in e.get("pathways") or ()),
            )
            if cat.population is not None and cat.population not in default_model().groups:
                raise ValueError(f"{p}: domains.{dname}[{i}] ({cat.name}): population {cat.population!r} is not a "
                                 f"group of populations.yaml: {sorted(default_model().groups)}")
            if cat.pathways:
                if paths is None:
                    paths = load_pathways(reg=None if reg is registry() else reg)
                unknown_p = [x for x in cat.pathways if x not in paths.pathways]
                if unknown_p:
                    raise ValueError(f"{p}: domains.{dname}[{i}] ({cat.name}): unknown pathways {unknown_p}")
                cat.calculators = [c for c in paths.union(cat.pathways) if reg.find(c) is not None]
                cats.append(cat)
                continue
            ids: list[str] = []
            for cid in cat.explicit:
                calc = reg.find(cid)
                if calc is None:
                    missing.setdefault(cat.name, []).append(cid)
                    continue
                ids.append(calc.id)
            for calc in reg:
                if calc.id not in ids and any(_matches(t, keywords[calc.id]) for t in cat.tags):
                    ids.append(calc.id)
            cat.calculators = ids
            cats.append(cat)
    for cname, ids in missing.items():
        log.warning("taxonomy category %r names calculators the registry lacks (skipped): %s", cname, ", ".join(ids))
    return Taxonomy(cats, missing)
