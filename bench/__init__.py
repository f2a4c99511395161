"""Benchmarks: what every turn costs with ``memory_adapter``, side by side with the prior art (``hindsight-agentcore``
0.1.3), against a real local Hindsight. ``python -m bench`` (or ``make bench``) runs everything and writes
``bench/results/``; one module per measurement. Benchmarks, not tests: nothing here asserts.
"""
