"""Tests of the activation family (customops.kernels.activations)."""
