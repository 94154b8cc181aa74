"""Experiments of the bidir paper: one runner module per `attnlab run bidir-<name>`."""
