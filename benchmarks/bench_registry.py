#!/usr/bin/env python
"""Registry speed: import time of the full registry (fresh interpreter) and MedCalc-Bench solver
throughput (rows solved and scored per second) over a CSV.

    python benchmarks/bench_registry.py [--csv tests/fixtures/medcalc_bench/dev_relabelled.csv] [--repeat 20]

Run by hand; the figures depend on the machine. Only rows whose calculator is registered count
towards the throughput, so unregistered ids do not flatter it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_IMPORT_SNIPPET = (
    "import time; t=time.perf_counter(); "
    "from calcmate.calculators import registry; n=len(registry()); "
    "print(n, time.perf_counter()-t)"
)


def import_time(runs: int) -> tuple[int, list[float]]:
    """Seconds to import calcmate.calculators and build the registry, in fresh interpreters."""
    times, n = [], 0
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _IMPORT_SNIPPET], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
        n, t = int(out[0]), float(out[1])
        times.append(t)
    return n, times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--csv", type=Path, default=ROOT / "tests/fixtures/medcalc_bench/dev_relabelled.csv")
    p.add_argument("--repeat", type=int, default=20, help="passes over the CSV for the throughput figure")
    p.add_argument("--import-runs", type=int, default=5, help="fresh interpreters for the import figure")
    args = p.parse_args(argv)

    from calcmate.calculators import registry
    from calcmate.medcalc_bench import RegistrySolver, read_csv, score

    n_calc, times = import_time(args.import_runs)
    print(f"registry import + build: {n_calc} calculators, median {statistics.median(times) * 1000:.0f} ms "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}; {len(times)} fresh interpreters)")

    registered = {c.medcalc_bench_id for c in registry() if c.medcalc_bench_id}
    rows = [r for r in read_csv(args.csv) if r.calculator_id in registered]
    solver = RegistrySolver()
    for r in rows:  # warm caches (unit parsing, input indexes)
        score(r, solver.solve(r))
    t0 = time.perf_counter()
    correct = 0
    for _ in range(args.repeat):
        for r in rows:
            correct += score(r, solver.solve(r))
    dt = time.perf_counter() - t0
    total = len(rows) * args.repeat
    print(f"solver: {total} rows ({len(rows)} registered rows × {args.repeat}) in {dt:.2f} s = "
          f"{total / dt:,.0f} rows/s ({dt / total * 1e6:.0f} µs per row: parse entities, map, validate+convert, "
          f"compute, score); accuracy {correct / total:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
