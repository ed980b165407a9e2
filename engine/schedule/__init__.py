"""Schedulers: a registry in nvFuser's priority order, heuristics, and IterDomain schedules."""
