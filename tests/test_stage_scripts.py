"""Every stage script takes --config FILE, --set KEY=VALUE and --out, and says so in --help;
a bad value from --set is rejected with an error naming the field, before any work starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["data_gen/synthesize.py", "train/sft.py", "eval/evaluate.py", "eval/sweep.py", "eval/medcalc_bench.py",
           "scripts/build_tiny_model.py", "scripts/load_official_db.py"]


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / script), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_lists_config_set_and_out(script):
    proc = run(script, "--help")
    assert proc.returncode == 0, proc.stderr
    for flag in ("--config", "--set", "--out"):
        assert flag in proc.stdout, f"{script} --help lacks {flag}"
    assert len(proc.stdout.split("options:")[0].strip().splitlines()) >= 3, "usage without a description"


@pytest.mark.parametrize("script, bad, field", [
    ("scripts/build_tiny_model.py", "kind=huge", "kind"),
    ("scripts/load_official_db.py", "name=[1, 2]", "name"),
])
def test_bad_override_names_the_field(script, bad, field, tmp_path):
    proc = run(script, "--set", bad, "--out", str(tmp_path / "x"))
    assert proc.returncode == 2
    assert f"{field}:" in proc.stderr
    assert not (tmp_path / "x").exists()
