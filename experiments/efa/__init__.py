"""Experiments of the efa paper: one runner module per `attnlab run efa-<name>`."""
