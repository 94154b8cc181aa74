"""The papers' reported numbers: one module per paper with PAPER_NUMBERS = {(experiment, setting,
model, metric): value}, read by `attnlab results <paper>`."""
