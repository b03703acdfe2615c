"""The README cannot rot: every command it shows names a script, config and flags that exist.

Commands the quickstart runs are executed for real by tests/test_quickstart_e2e.py; the GPU-cluster
commands (vLLM, 8×H100, SLURM) cannot run here, so for those this test checks that the script exists,
that every flag the README passes appears in the script's --help, that every config file it names
exists, and that every sbatch template parses.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    cmds: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line:
                cmds.append(line)
    # inline commands in prose: `python ...`, `sbatch ...`, `torchrun ...`
    cmds += [c for c in re.findall(r"`((?:python|torchrun|sbatch|CALCMATE_PG_DSN=\S+ python) [^`]+)`", README)]
    return cmds


COMMANDS = _commands()


def _argv(cmd: str) -> list[str]:
    argv = shlex.split(cmd)
    while argv and re.match(r"^[A-Z_]+=", argv[0]):  # leading env assignments
        argv = argv[1:]
    return argv


def _script(argv: list[str]) -> str | None:
    for a in argv[1:]:
        if a.endswith((".py", ".sh", ".sbatch")):
            return a
    if argv[:2] == ["python", "-m"]:
        return argv[2]
    return None


@lru_cache(maxsize=None)
def _help(script: str) -> str:
    cmd = [sys.executable, "-m", script, "--help"] if not script.endswith(".py") else [sys.executable, script, "--help"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"{script} --help failed:\n{out.stderr[-2000:]}"
    return out.stdout


def test_readme_opens_with_the_two_commands():
    first_block = re.search(r"```bash\n(.*?)```", README, flags=re.S).group(1)
    lines = [l.split("#")[0].strip() for l in first_block.strip().splitlines()]
    assert lines == ["scripts/quickstart.sh", "scripts/test.sh"]


def test_found_the_commands():
    assert sum(c.startswith(("python", "torchrun")) for c in COMMANDS) >= 10


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if _argv(c)[0] in ("python", "torchrun")])
def test_command_script_flags_and_configs_exist(cmd):
    argv = _argv(cmd)
    script = _script(argv)
    assert script, f"no script in {cmd!r}"
    if script.endswith(".py"):
        assert (ROOT / script).is_file(), f"README names missing script {script}"
    for tok in argv:
        if tok.startswith("configs/"):
            assert (ROOT / tok).is_file(), f"README names missing config {tok}"
    flags = {t.split("=")[0] for t in argv if t.startswith("--")}
    if flags:
        text = _help(script)
        missing = [f for f in flags if f not in text]
        assert not missing, f"{script} --help does not know {missing} (README: {cmd})"


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if _argv(c)[0] == "sbatch"])
def test_sbatch_templates_parse(cmd):
    argv = _argv(cmd)
    script = _script(argv)
    assert script and (ROOT / script).is_file()
    assert subprocess.run(["bash", "-n", str(ROOT / script)]).returncode == 0
    for tok in argv:
        if tok.startswith("configs/"):
            assert (ROOT / tok).is_file(), f"README names missing config {tok}"


def test_dry_run_figures_in_readme_match_the_estimator(tmp_path):
    """The resources table quotes `train/sft.py --dry-run` for calcmate-4b; recompute it."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # as in CI: no hub, no cached weights, no dataset yet
    out = subprocess.run([sys.executable, "train/sft.py", "--config", "configs/calcmate-4b.yaml", "--dry-run"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    total = re.search(r"total: ([\d.]+) GB of 80 GB -> FITS, margin \+([\d.]+) GB", out.stdout)
    assert total, out.stdout[-2000:]
    assert f"{total.group(1)} GB: fits, margin {total.group(2)} GB" in README
