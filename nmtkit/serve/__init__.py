"""``nmtkit serve``: translation over HTTP (an optional extra: FastAPI and uvicorn,
``pip install -e '.[serve]'`` from a checkout)."""
