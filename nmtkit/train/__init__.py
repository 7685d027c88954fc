"""Training: the settings, the loop, validation, what a run reports and its log."""
