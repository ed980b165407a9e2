"""CUDA code generation: kernel IR to CUDA C, with runtime headers inlined.

The one place C is written: expressions (expressions.py, the fusion's typed ops spelled from
ops_table.py), statements (statements.py), whole kernels (cuda.py).
"""
