"""Imports point inward: the calcmate/ library never reaches out to the stage recipes, and its light
modules stay light (a calculator lookup must not start torch, transformers, mcp or a database driver)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTWARD = ("data_gen", "train", "eval", "scripts", "benchmarks", "tests")
HEAVY = ("torch", "transformers", "datasets", "trl", "accelerate", "deepspeed", "mcp", "psycopg", "vllm")


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Absolute module names a file imports (``from . import x`` stays inside the package)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def outward_imports(package: Path, root: Path = ROOT) -> list[str]:
    bad = []
    for path in sorted(package.rglob("*.py")):
        for line, mod in imported_modules(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if mod.split(".")[0] in OUTWARD:
                bad.append(f"{path.relative_to(root)}:{line} imports {mod}")
    return bad


def test_calcmate_never_imports_the_stage_recipes():
    assert outward_imports(ROOT / "calcmate") == []


def test_the_checker_catches_an_outward_import(tmp_path):
    (tmp_path / "ok.py").write_text("import json\nfrom calcmate.io import atomic_write_text\nfrom . import sibling\n")
    (tmp_path / "bad.py").write_text("def f():\n    from eval.evaluate import main\n    import train.sft\n")
    assert outward_imports(tmp_path, root=tmp_path) == ["bad.py:2 imports eval.evaluate", "bad.py:3 imports train.sft"]


def heavy_modules_after(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter and list the heavy packages it left in sys.modules."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import calcmate.calculators\ncalcmate.calculators.registry().get('Creatinine Clearance (Cockcroft-Gault Equation)')",
    "import calcmate.tasks",
    "import calcmate.config, calcmate.io, calcmate.units, calcmate.domains",
    "import calcmate.scoring.metrics",
])
def test_light_modules_do_not_import_heavy_packages(code):
    assert heavy_modules_after(code) == []


def test_the_probe_sees_a_heavy_import():
    assert "mcp" in heavy_modules_after("import calcmate.tools.toolbox")
