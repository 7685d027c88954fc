"""nmtkit: attention-based neural machine translation from the command line."""

__version__ = "1.2.0"
