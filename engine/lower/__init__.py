"""Lowering: a scheduled fusion to kernel IR, one pass a module."""
