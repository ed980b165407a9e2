"""Execution: device properties, back ends, profiling."""
