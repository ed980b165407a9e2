"""Analyses over the fusion IR: persistent buffers, coverage of a schedule, vectorization, view chains, flops."""
