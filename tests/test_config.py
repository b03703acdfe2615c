import pytest
from pydantic import BaseModel, Field

from calcmate.config import ConfigError, apply_overrides, load_config


class Teacher(BaseModel):
    concurrency: int = 4
    url: str = "http://localhost:8000/v1"


class Cfg(BaseModel):
    num_tasks: int = Field(10, gt=0)
    seed: int = 0
    teacher: Teacher = Teacher()
    tags: list[str] = []


def test_yaml_and_dotted_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("num_tasks: 5\nteacher:\n  concurrency: 2\n")
    cfg = load_config(p, ["teacher.concurrency=16", "tags=[a, b]", "seed=7"], Cfg)
    assert (cfg.num_tasks, cfg.teacher.concurrency, cfg.tags, cfg.seed) == (5, 16, ["a", "b"], 7)
    assert cfg.teacher.url == "http://localhost:8000/v1"


def test_error_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match=r"num_tasks: Input should be greater than 0"):
        load_config(None, ["num_tasks=0"], Cfg)
    with pytest.raises(ConfigError, match=r"teacher\.concurrency"):
        load_config(None, ["teacher.concurrency=lots"], Cfg)


def test_missing_file_and_bad_override(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml", [], Cfg)
    with pytest.raises(ConfigError, match="not key=value"):
        apply_overrides({}, ["num_tasks"])
    with pytest.raises(ConfigError, match="not a mapping"):
        apply_overrides({"seed": 1}, ["seed.x=2"])
