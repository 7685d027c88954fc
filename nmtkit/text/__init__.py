"""Text processing: cleaning rules, Moses tokenisation, BPE, and their composition."""
