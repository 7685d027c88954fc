"""bin/bench-blas: the products it times are the demo's, every backend computes the same product,
and its figures are 2·M·K·N over the best time (no speed is asserted here)."""

import pytest
import torch

from bench import bench_blas
from nmtkit.models.loss import CPU_CHUNK_ELEMENTS


def test_the_products_are_the_demo_updates():
    found = {where: (m, k, n) for where, m, k, n in bench_blas.shapes(5628)}
    rows = CPU_CHUNK_ELEMENTS // 5628
    assert found["output layer: logits (one chunk)"] == (rows, 256, 5628) and rows == 745
    assert found["output layer: weight gradient"] == (5628, rows, 256)
    assert found["GRU step U s (encoder and decoder)"] == (80, 256, 768)
    assert len(found) == len(bench_blas.shapes(5628))  # one row per product


@pytest.mark.parametrize("name", list(bench_blas.BACKENDS))
def test_every_backend_computes_the_product(name):
    if name == "oneDNN" and not torch.backends.mkldnn.is_available():
        pytest.skip("this torch has no oneDNN")
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(300, 40, generator=g), torch.randn(40, 70, generator=g)
    got = torch.as_tensor(bench_blas.BACKENDS[name](a, b)())
    assert got.shape == (300, 70) and torch.allclose(got, a @ b, atol=1e-4)


def test_gflops_are_twice_mkn_over_the_best_time(monkeypatch):
    monkeypatch.setattr(bench_blas, "best_seconds", lambda run, repeat: 0.5)
    rows = bench_blas.measure(vocab=4096, repeat=1)
    first = rows[0]
    assert first["torch (MKL)"] == pytest.approx(2 * first["m"] * first["k"] * first["n"] / 0.5 / 1e9)
    table = bench_blas.table(rows)
    assert table.count("\n") == len(rows) + 1 and "| output layer: logits (one chunk) |" in table


def test_nmtkits_own_path_computes_the_product_in_every_layout():
    pytest.importorskip("threadpoolctl", reason="nmtkit's numpy path sizes OpenBLAS through threadpoolctl")
    from nmtkit.core import blas

    assert blas.choose("numpy", 2)
    try:
        g = torch.Generator().manual_seed(0)
        for where in ("output layer: logits", "output layer: input gradient", "output layer: weight gradient"):
            a, b = bench_blas.operands(where, 300, 40, 70, g)  # each laid out as training has it
            got = bench_blas._nmtkit(a, b)()
            assert got.shape == (300, 70) and torch.allclose(got, a @ b, atol=1e-4)
    finally:
        blas.choose("torch", 2)
