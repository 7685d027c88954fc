"""Corpus data: vocabularies, the binarized format, and the embedded Bible corpus."""
