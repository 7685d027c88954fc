"""The models: RNNsearch and RNNencdec (Bahdanau et al.; Cho et al.), Luong et al.'s stacked LSTMs,
their layers, attention and loss; :mod:`.build` makes one from its family's config (:mod:`.config`)."""
