"""Per-operator spaces of fuzz cases (base: the shared vocabulary; one module per operator family;
simplifications: the shrinker's shared candidate moves)."""
