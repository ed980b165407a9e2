"""nvfp4 math (being written): block quantization, scale swizzles, the layout op."""
