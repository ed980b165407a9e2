"""Reading fusion files, one job per module (engine.frontend.pyread drives them).

shape: the top-level statements a script is read as (main guards, test functions, the
legacy body without a with block); needs: which of them the fusion needs (the rest are
skipped unread); pure: the pure math a file may compute with; syntax: the name analysis
both share.
"""
