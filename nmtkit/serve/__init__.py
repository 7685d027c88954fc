"""``nmtkit serve``: translation over HTTP (an optional extra: ``pip install nmtkit[serve]``)."""
