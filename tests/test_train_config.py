"""Bad SFT configs fail fast, before torch or a process group, with a message naming the field."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calcmate.config import ConfigError, load_config
from calcmate.training.config import SFTRunConfig

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "sft" / "trajectories.jsonl"


@pytest.fixture()
def tiny_model_dir(tmp_path):
    """Only config.json matters to validation: the real tiny Qwen3 shape (4 heads, 2 KV heads)."""
    from calcmate.training.tiny import build_model_config

    d = tmp_path / "tiny"
    d.mkdir()
    build_model_config("dense", 512, pad_token_id=0, eos_token_id=2).to_json_file(d / "config.json")
    return d


def overrides(model: Path, **kv) -> list[str]:
    base = {"model_name_or_path": str(model), "dataset_path": str(FIXTURE), "output_dir": "/tmp/unused"}
    return [f"{k}={v}" for k, v in {**base, **kv}.items()]


def load(model, **kv) -> SFTRunConfig:
    return load_config(ROOT / "configs" / "tiny-cpu.yaml", overrides(model, **kv), SFTRunConfig)


@pytest.mark.parametrize("kv, field, words", [
    ({"learning_rat": 1e-5}, "learning_rat", "Extra inputs"),
    ({"sp_size": 3}, "sp_size", "attention heads"),  # 4 heads
    ({"sp_size": 8}, "sp_size", "attention heads"),
    ({"packing": True}, "packing", "sequence parallelism"),
    ({"dataset_path": "/nonexistent/data.jsonl"}, "dataset_path", "does not exist"),
    ({"model_name_or_path": "/nonexistent/model"}, "model_name_or_path", "does not exist"),
    ({"deepspeed": "/nonexistent/ds.json"}, "deepspeed", "does not exist"),
    ({"overlong_policy": "wrap"}, "overlong_policy", "truncate"),
    ({"learning_rate": -1}, "learning_rate", "greater than"),
    ({"use_cpu": True, "attn_implementation": "flash_attention_2"}, "attn_implementation", "GPU"),
])
def test_bad_config_names_the_field(tiny_model_dir, kv, field, words):
    with pytest.raises(ConfigError) as e:
        load(tiny_model_dir, **kv)
    msg = str(e.value)
    assert field in msg and words in msg, msg


def test_sp_must_divide_world_size(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "6")
    with pytest.raises(ConfigError, match="sp_size: 4 does not divide the world size 6"):
        load(tiny_model_dir, sp_size=4)
    monkeypatch.setenv("WORLD_SIZE", "8")
    assert load(tiny_model_dir, sp_size=4).sp_size == 4


def test_kv_head_rule(tmp_path):
    """Ulysses needs kv % sp == 0 or sp % kv == 0: 8 heads / 6 KV heads with sp=4 passes the head rule only."""
    import json

    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 8,
                                               "num_key_value_heads": 6, "vocab_size": 10}))
    with pytest.raises(ConfigError, match="KV-head rule"):
        load(d, sp_size=4)
    assert load(d, sp_size=2).sp_size == 2


def test_paper_configs_validate_for_their_gpu_counts(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # hub ids are allowed unvalidated when the hub is reachable
    for name, world in (("calcmate-4b", 8), ("calcmate-30b-a3b", 32)):
        cfg = load_config(ROOT / "configs" / f"{name}.yaml", [f"dataset_path={FIXTURE}"], SFTRunConfig)
        assert cfg.world_size() == world and cfg.sp_size == 8 and cfg.max_length == 150_000
        assert cfg.arch() is not None and not cfg.packing


def test_cli_fails_before_torch_or_a_process_group(tmp_path):
    """The real CLI under torchrun-like env: exits 2 naming the field; torch never imported, no group created."""
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "configs" / "tiny-cpu.yaml").read_text() + "\nsp_size: 3\n")
    probe = ("import runpy, sys; sys.argv = ['sft.py', '--config', %r, '--set', 'model_name_or_path=%s'];\n"
             "try:\n    runpy.run_path(%r, run_name='__main__')\n"
             "except SystemExit as e:\n    print('torch' in sys.modules, e.code); raise SystemExit(e.code)")
    tiny = tmp_path / "m"
    tiny.mkdir()
    from calcmate.training.tiny import build_model_config

    build_model_config("dense", 512, pad_token_id=0, eos_token_id=2).to_json_file(tiny / "config.json")
    env = {**os.environ, "WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": "29999"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", probe % (str(bad), tiny, str(ROOT / "train" / "sft.py"))],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr
    assert "sp_size: 3 does not divide the world size 2" in proc.stderr
    assert proc.stdout.split() == ["False", "2"], proc.stdout  # torch (hence torch.distributed) never imported
    assert elapsed < 20, elapsed  # generous bound; the check itself takes well under a second


def test_dry_run_says_whether_150k_fits_on_h100(capsys, monkeypatch):
    sys.path.insert(0, str(ROOT))
    from train import sft  # noqa: F401  (train/ has no __init__; imported as a namespace package)

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert sft.main(["--config", str(ROOT / "configs" / "calcmate-4b.yaml"), "--set", f"dataset_path={FIXTURE}",
                     "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "max_length: 150000" in out and "SP=8" in out and "18,750 per GPU" in out
    assert "of 80 GB -> FITS, margin +" in out
    assert "attention = 5.5x the dense 6N term" in out  # field notes: 5.5x at 150k for Qwen3-4B
