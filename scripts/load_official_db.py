"""Load the official MedMCP-Calc dump (<table>.csv.gz files) into a fresh EHR database.

    python scripts/load_official_db.py --dump DIR [--name medmcp_calc] [--out counts.json]
    python scripts/load_official_db.py --config db.yaml --set name=medmcp_dev

Uses $CALCMATE_PG_DSN if set (the database persists there); otherwise an embedded server that
lives only as long as this script, which is useful to check that a dump loads. A config (optional)
holds the same keys as the flags: dump, name, out. --out writes the loaded row counts per table as JSON.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.config import ConfigError, add_config_args, exit_on_config_error, flat_overrides, load_config  # noqa: E402
from calcmate.io import atomic_write_json  # noqa: E402


class LoadDbConfig(BaseModel):
    dump: Path | None = None
    name: str = "medmcp_calc"
    out: Path | None = None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(ap, out=False)
    ap.add_argument("--dump", type=Path, help="directory holding <table>.csv.gz (required here or in the config)")
    ap.add_argument("--name", help="database name to create, replaced if it exists (default medmcp_calc)")
    ap.add_argument("--out", type=Path, help="also write the row counts per table to this JSON file")
    a = ap.parse_args(argv)
    overrides = flat_overrides(a) + [f"{k}={getattr(a, k)}" for k in ("dump", "name", "out") if getattr(a, k) is not None]
    try:
        cfg = load_config(a.config, overrides, LoadDbConfig)
    except ConfigError as e:
        exit_on_config_error(e)
    if cfg.dump is None or not cfg.dump.is_dir():
        exit_on_config_error(ConfigError(f"--dump: {str(cfg.dump)!r} is not a directory" if cfg.dump else
                                         "--dump: the dump directory is required"))
    from calcmate.ehr import start_server
    from calcmate.ehr.loader import load_dump

    server = start_server()
    db = server.create_database(cfg.name)
    counts = load_dump(db, cfg.dump)
    for t, n in counts.items():
        print(f"{t:22s} {n:>10,d} rows")
    if cfg.out:
        atomic_write_json(cfg.out, {"database": cfg.name, "rows": counts})
    print(f"read-only DSN for the tools: {db.ro_dsn}")
    if server.embedded:
        print("(embedded server: stopped when this script exits; set CALCMATE_PG_DSN to keep the database)")


if __name__ == "__main__":
    main()
