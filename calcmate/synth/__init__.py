"""The trajectory synthesizer: scenario taxonomy -> verified, tool-augmented training trajectories.

Stages (each a module): taxonomy, composer (task workflows), sampler (patients), fuzzy (questions),
planner (planning headers), teacher (LLM clients), verify, export, stats, decontam; ``pipeline``
wires them for ``data_gen/synthesize.py``.
"""
