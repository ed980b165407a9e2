"""One widget per module; each carries its own styles in DEFAULT_CSS."""
