"""Search and translation: beam search and sampling over a model's step, raw text in and out with a checkpoint,
files and streams, and forced decoding along given translations."""
