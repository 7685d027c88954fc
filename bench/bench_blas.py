"""The float32 matrix products of the demo's training update, timed through torch's BLAS and the
alternatives on this CPU, in GFLOPS (2·M·K·N over the best time).

    bin/bench-blas [--threads 2] [--vocab 5628] [--repeat 3] [--chunk-rows 256,128] [--json FILE]

torch's CPU build does its float32 products through oneMKL; on AMD CPUs MKL may not take its best
code path. Beside it: numpy's BLAS (OpenBLAS in numpy's wheels), oneDNN (torch's own, as
``inference_linear`` uses it), MKL given the same product in blocks of rows, and nmtkit's own path
on AMD CPUs (``--logits-blas numpy``: OpenBLAS at one thread, the rows split over as many workers
as ``--threads``; :mod:`nmtkit.core.blas`). Each product is
one the demo's update runs (``--schedule cpu``: 256 units, 80 sentences, ~2,400 target tokens, the
output layer in chunks of 4M logits), named by where it runs, forward and backward.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmtkit.core import blas
from nmtkit.core.machine import describe, machine
from nmtkit.models.loss import CPU_CHUNK_ELEMENTS

from .bench_common import write_text

UNITS = 256  # the small preset's emb = hidden = align = maxout (tied embeddings)
SENTENCES, TOKENS = 80, 2400  # a demo batch: 80 sentences of about 30 target tokens
BLOCK = 128  # rows per block of the "MKL in blocks" column


def shapes(vocab: int, chunk_rows: tuple[int, ...] = ()) -> list[tuple[str, int, int, int]]:
    """(where, M, K, N) of the products in one update, M × K times K × N; the output layer's also
    in chunks of each of ``chunk_rows`` rows (the split into shapes that may suit the BLAS better)."""
    n, rows = UNITS, max(1, CPU_CHUNK_ELEMENTS // vocab)
    output = []
    for r in (rows, *chunk_rows):
        said = "" if r == rows else f", {r}-row chunks"
        output += [
            (f"output layer: logits{said or ' (one chunk)'}", r, n, vocab),
            (f"output layer: input gradient{said}", r, vocab, n),
            (f"output layer: weight gradient{said}", vocab, r, n),
        ]
    return [
        *output,
        ("deep output: C_o c_i, all positions", TOKENS, 2 * n, 2 * n),
        ("GRU inputs W x, all positions", TOKENS, n, 3 * n),
        ("GRU step U s (encoder and decoder)", SENTENCES, n, 3 * n),
        ("GRU step, its input gradient", SENTENCES, 3 * n, n),
        ("GRU step, its weight gradient", n, SENTENCES, 3 * n),
        ("decoder step: context gates C c_i", SENTENCES, 2 * n, 3 * n),
        ("attention: U_a h, all source positions", TOKENS, 2 * n, n),
    ]


def _mkl(a: torch.Tensor, b: torch.Tensor) -> Callable[[], Any]:
    return lambda: torch.mm(a, b)


def _mkl_blocks(a: torch.Tensor, b: torch.Tensor) -> Callable[[], Any]:
    return lambda: torch.cat([torch.mm(a[i : i + BLOCK], b) for i in range(0, a.shape[0], BLOCK)])


def _numpy(a: torch.Tensor, b: torch.Tensor) -> Callable[[], Any]:
    x, y = a.numpy(), b.numpy()
    return lambda: x @ y


def _onednn(a: torch.Tensor, b: torch.Tensor) -> Callable[[], Any]:
    # a linear layer's weight is N × K; converted once, as a layer's would be once per update
    weight = b.t().contiguous().to_mkldnn()
    return lambda: torch._C._nn.mkldnn_linear(a.contiguous().to_mkldnn(), weight, None).to_dense()


BACKENDS: dict[str, Callable[[torch.Tensor, torch.Tensor], Callable[[], Any]]] = {
    "torch (MKL)": _mkl,
    f"MKL, {BLOCK}-row blocks": _mkl_blocks,
    "numpy (its BLAS)": _numpy,
    "oneDNN": _onednn,
}


def best_seconds(run: Callable[[], Any], repeat: int, min_seconds: float = 0.2) -> float:
    """The best time of one call over ``repeat`` loops of enough calls to last ``min_seconds``."""
    run()  # warm-up: the library's first call sets itself up
    calls, spent = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        spent = time.perf_counter() - t0
        if spent >= min_seconds:
            break
        calls *= 2
    best = spent / calls
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def operands(where: str, m: int, k: int, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A (M × K) and B (K × N) laid out as training has them: a layer's forward product reads its
    N × K weight transposed (x Wᵀ), a weight gradient reads the output gradient transposed (Gᵀ x),
    an input gradient has both as stored (G W)."""
    if "weight gradient" in where:
        return torch.randn(k, m, generator=g).t(), torch.randn(k, n, generator=g)
    if "input gradient" in where:
        return torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    return torch.randn(m, k, generator=g), torch.randn(n, k, generator=g).t()


def _nmtkit(a: torch.Tensor, b: torch.Tensor) -> Callable[[], Any]:
    out, weight = torch.empty(a.shape[0], b.shape[1]), b.t()
    return lambda: blas.logits(a, weight, out)


# nmtkit's own path (``--logits-blas numpy``): OpenBLAS at one thread, the rows split over workers
SHIPPED = "numpy, a thread a worker (nmtkit's)"


def measure(vocab: int, repeat: int, chunk_rows: tuple[int, ...] = (), threads: int = 2) -> list[dict[str, Any]]:
    """GFLOPS of each product through each backend (None where a backend is missing), then
    through nmtkit's numpy path, which holds OpenBLAS to one thread for the rest of the process."""
    rows = []
    for where, m, k, n in shapes(vocab, chunk_rows):
        a, b = operands(where, m, k, n, torch.Generator().manual_seed(0))
        row: dict[str, Any] = {"product": where, "m": m, "k": k, "n": n}
        for name, make in BACKENDS.items():
            if name == "oneDNN" and not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
                row[name] = None
                continue
            row[name] = 2 * m * k * n / best_seconds(make(a, b), repeat) / 1e9
        rows.append(row)
    shipped = blas.choose("numpy", threads)
    for row in rows:
        a, b = operands(row["product"], row["m"], row["k"], row["n"], torch.Generator().manual_seed(0))
        flops = 2 * row["m"] * row["k"] * row["n"]
        row[SHIPPED] = flops / best_seconds(_nmtkit(a, b), repeat) / 1e9 if shipped else None
    blas.choose("torch", threads)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    names = [*BACKENDS, SHIPPED]
    out = ["| product | M×K×N | " + " | ".join(names) + " |", "|---|---|" + "---:|" * len(names)]
    for r in rows:
        best = max(v for k, v in r.items() if k in names and v is not None)
        cells = ["—" if r[k] is None else (f"**{r[k]:.0f}**" if r[k] == best else f"{r[k]:.0f}") for k in names]
        out.append(f"| {r['product']} | {r['m']}×{r['k']}×{r['n']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def blas_names() -> str:
    """Which BLAS torch and numpy were built with."""
    torch_blas = next(
        (p.split("=", 1)[1] for p in torch.__config__.show().replace(",", "\n").split() if p.startswith("BLAS_INFO")),
        "?",
    )
    config: Any = np.show_config(mode="dicts")
    try:
        numpy_blas = config["Build Dependencies"]["blas"]["name"]
    except (TypeError, KeyError):
        numpy_blas = "?"
    return f"torch's BLAS: {torch_blas}; numpy's: {numpy_blas}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench-blas", description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch's threads (numpy's BLAS keeps its own count)")
    ap.add_argument("--vocab", type=int, default=5628, help="target units of the output layer (the demo's: 5,628)")
    ap.add_argument("--repeat", type=int, default=3, help="timing loops per product; the best counts")
    ap.add_argument(
        "--chunk-rows",
        default="256,128",
        help="the output layer's products also in chunks of these rows, comma-separated ('' for none)",
    )
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    chunks = tuple(int(r) for r in args.chunk_rows.split(",") if r)
    rows = measure(args.vocab, args.repeat, chunks, args.threads)
    m = machine()
    print(f"{describe(m)}; {args.threads} threads. {blas_names()}. GFLOPS, float32, best of {args.repeat}:")
    print(table(rows))
    if args.json:
        write_text(Path(args.json), json.dumps({"machine": m, "threads": args.threads, "rows": rows}, indent=1) + "\n")
