"""CalcMate: verified tool-augmented SFT recipe for medical-calculator agents.

The shared core used by the three stages (data_gen/, train/, eval/):
calculator registry, units, task format, EHR, MCP tools, agent and scoring.
"""

__version__ = "0.1.0"
