"""Torch modules that the experiments train and the theory claims check."""
