"""Text renderers shared by the TUI and `fusescope show` (rich only, never Textual)."""
