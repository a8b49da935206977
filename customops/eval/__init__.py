"""Evaluation shared by compare and fuzz: the three sides (built-in, custom, reference) in child
processes, their outcomes, metrics between arrays."""
