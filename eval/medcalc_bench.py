#!/usr/bin/env python
"""Score a solver on a MedCalc-Bench CSV and print per-calculator accuracy.

    python eval/medcalc_bench.py --solver registry --csv dev_relabelled.csv --out report.json

``--solver registry`` runs the calculator registry on each row's extracted "Relevant Entities"
(a check of the registry and of the labels). ``--solver model`` runs a model on the patient
note (zero-shot, one-shot, or tool-augmented: --set model.mode=tools) through the agent's backends. The report JSON holds overall and per-calculator accuracy and the
reason every unsolvable row was not answered. With --solver model, OUT.transcripts.jsonl records every
row's exchange (tool calls and results included); a rerun with the same --out resumes from it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without install

from calcmate.config import ConfigError, add_config_args, exit_on_config_error, flat_overrides, load_config  # noqa: E402
from calcmate.io import atomic_write_json  # noqa: E402
from calcmate.medcalc_bench import RegistrySolver, Report, Solver, evaluate, read_csv  # noqa: E402

SOLVERS = ("registry", "model")


class MedCalcBenchConfig(BaseModel):
    solver: Literal["registry", "model"] = "registry"
    csv: Path | None = None
    out: Path | None = None
    calculator_ids: list[int] | None = None  # restrict to these MedCalc-Bench calculator ids
    include_rows: bool = False  # write every row's answer into the report
    model: dict | None = None  # --solver model: calcmate.agent.medcalc_solver.ModelSolverConfig (mode, backend, concurrency)


def make_solver(name: str, model_cfg: dict | None = None, rows: list | None = None) -> Solver:
    if name == "registry":
        return RegistrySolver()
    if name == "model":
        from calcmate.agent.medcalc_solver import ModelSolver, ModelSolverConfig

        mcfg = ModelSolverConfig.model_validate(model_cfg or {})
        if not mcfg.backend.model:
            raise NotImplementedError("--solver model needs a model: pass --model PATH_OR_ID "
                                      "(and e.g. --set model.mode=one_shot model.backend.kind=transformers)")
        return ModelSolver(mcfg, rows)
    raise ValueError(f"unknown solver {name!r}; choose one of {SOLVERS}")


def print_report(report: Report, console: Console) -> None:
    table = Table(title=f"MedCalc-Bench, solver={report.solver}")
    table.add_column("Calculator")
    table.add_column("n", justify="right")
    table.add_column("correct", justify="right")
    table.add_column("accuracy", justify="right")
    for name, s in sorted(report.per_calculator.items()):
        style = "green" if s.accuracy == 1 else "yellow" if s.accuracy > 0 else "red"
        table.add_row(name, str(s.n), str(s.correct), f"[{style}]{s.accuracy:.1%}[/]")
    o = report.overall
    table.add_row("[bold]overall", f"[bold]{o.n}", f"[bold]{o.correct}", f"[bold]{o.accuracy:.1%}")
    console.print(table)
    if report.errors:
        console.print(f"{len(report.errors)} unsolvable rows (see the report's 'errors')")
    if report.entity_notes:
        console.print(f"{len({n.row for n in report.entity_notes})} rows with ignored or merged entities "
                      "(see the report's 'entity_notes')")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(p, out=False)
    p.add_argument("--solver", choices=SOLVERS, help="who answers the rows (default: registry)")
    p.add_argument("--csv", type=Path, help="a MedCalc-Bench CSV (dev, dev_relabelled, or the full test set)")
    p.add_argument("--out", type=Path, help="where to write the JSON report")
    p.add_argument("--model", help="--solver model: checkpoint path or id (sets model.backend.model)")
    args = p.parse_args(argv)
    overrides = flat_overrides(args)
    for key in ("solver", "csv", "out"):
        if getattr(args, key) is not None:
            overrides.append(f"{key}={getattr(args, key)}")
    if args.model is not None:
        overrides.append(f"model.backend.model={args.model}")
    try:
        cfg = load_config(args.config, overrides, MedCalcBenchConfig)
    except ConfigError as e:
        exit_on_config_error(e)
    if cfg.csv is None:
        p.error("--csv (or csv: in the config) is required")
    console = Console(stderr=True)
    try:
        all_rows = rows = read_csv(cfg.csv)
    except (OSError, ValueError) as e:
        console.print(f"[red]error:[/] {e}")
        return 2
    if cfg.calculator_ids:
        rows = [r for r in rows if r.calculator_id in set(cfg.calculator_ids)]
    model_cfg = dict(cfg.model or {})
    if cfg.solver == "model" and cfg.out and "transcripts" not in model_cfg:  # every row's exchange, kept for resuming
        model_cfg["transcripts"] = str(cfg.out.with_suffix(".transcripts.jsonl"))
    try:
        solver = make_solver(cfg.solver, model_cfg, all_rows)
    except (NotImplementedError, ValueError) as e:
        console.print(f"[red]error:[/] {e}")
        return 2
    if hasattr(solver, "prefetch"):  # model solvers answer all rows concurrently first
        solver.prefetch(rows)
    report = evaluate(track(rows, description="solving", console=console, transient=True), solver)
    if hasattr(solver, "close"):
        solver.close()
    print_report(report, Console())
    if cfg.out:
        data = report.model_dump(mode="json", exclude=None if cfg.include_rows else {"rows"})
        atomic_write_json(cfg.out, data)
        console.print(f"report written to {cfg.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
