"""The activation family, correctly rounded: Sigmoid, Tanh, Softplus, Mish, Swish (logistic.py), Erf and
Gelu (gaussian.py), HardSigmoid, HardSwish, Elu, Selu, Celu (piecewise.py); evaluate.py rounds each once
to X's type, ddmath.py and erfmath.py hold the double-double arithmetic and erf they share."""
