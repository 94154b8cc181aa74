"""Experiments of the fenchel paper: one runner module per `attnlab run fenchel-<name>`."""
