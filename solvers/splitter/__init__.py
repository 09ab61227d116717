"""Splitter weights for ordered data-parallel regions (Schneider et al.): blocking-rate functions, Fox's greedy."""

from solvers.splitter.model import SplitterInput, SplitterMemory, SplitterResult, update_weights

__all__ = ["SplitterInput", "SplitterMemory", "SplitterResult", "update_weights"]
