"""CUDA code generation: kernel IR to CUDA C, with runtime headers inlined."""
