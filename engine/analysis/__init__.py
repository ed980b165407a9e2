"""Analyses over the fusion IR: IterDomain maps between tensors and transform replay."""
