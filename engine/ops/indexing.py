"""indexing ops (being written: this module's builders join `__all__` as they land)."""

__all__: list[str] = []
