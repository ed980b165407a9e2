"""nvFuser python-frontend compatible definition API and fusion files."""
