"""``nmtkit serve``: translation over HTTP (nmtkit's serve extra: FastAPI and uvicorn)."""
