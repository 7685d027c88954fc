"""Word alignments as data: links from attention, Pharaoh files, the attention files of
``translate --alignments``, alignment error rate, symmetrization and heatmaps."""
