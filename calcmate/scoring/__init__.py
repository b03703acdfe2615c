"""Scoring: the shared answer-matching rules (``tolerance``) used by every evaluator and verifier."""

from calcmate.scoring.tolerance import medcalc_correct, parse_date, parse_gestational_age, parse_number, values_match

__all__ = ["medcalc_correct", "parse_date", "parse_gestational_age", "parse_number", "values_match"]
