"""Load the official MedMCP-Calc dump (<table>.csv.gz files) into a fresh EHR database.

    python scripts/load_official_db.py --dump DIR [--name medmcp_calc]

Uses $CALCMATE_PG_DSN if set (the database persists there); otherwise an embedded server that
lives only as long as this script, which is useful to check that a dump loads.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calcmate.ehr import start_server  # noqa: E402
from calcmate.ehr.loader import load_dump  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path, required=True, help="directory holding <table>.csv.gz")
    ap.add_argument("--name", default="medmcp_calc", help="database name to create (replaced if it exists)")
    a = ap.parse_args()
    server = start_server()
    db = server.create_database(a.name)
    counts = load_dump(db, a.dump)
    for t, n in counts.items():
        print(f"{t:22s} {n:>10,d} rows")
    print(f"read-only DSN for the tools: {db.ro_dsn}")
    if server.embedded:
        print("(embedded server: stopped when this script exits; set CALCMATE_PG_DSN to keep the database)")


if __name__ == "__main__":
    main()
