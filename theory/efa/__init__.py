"""Claims of "Exponential Family Attention" (`efa.*`), one module per part of the paper: compare, generalization, identifiability, reductions, structure, synthetic."""
