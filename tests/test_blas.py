"""The output layer's logits through numpy's BLAS (nmtkit.core.blas, ``--logits-blas``): chosen by
the CPU's vendor under auto, equal to torch's product and to the reference loss within float32
rounding, and held to --threads."""

import pytest
import torch
import torch.nn.functional as F

from nmtkit.core import blas
from nmtkit.core.errors import UserError
from nmtkit.core.machine import CPU
from nmtkit.core.settings import RuntimeConfig
from nmtkit.models.loss import linear_cross_entropy

threadpoolctl = pytest.importorskip("threadpoolctl", reason="numpy's BLAS is sized through threadpoolctl")


@pytest.fixture
def numpy_logits():
    """numpy's BLAS for the logits for one test, on one worker; torch's again after it, OpenBLAS's
    threads as before."""
    assert blas.choose("numpy", 1)
    yield
    blas.release()


@pytest.mark.parametrize(
    ("choice", "vendor", "flags", "numpy"),
    [
        ("auto", "AuthenticAMD", ("avx2", "fma"), True),  # Zen 3: measured faster
        ("auto", "AuthenticAMD", ("avx2", "fma", "avx512f"), False),  # Zen 4, 5: not measured
        ("auto", "GenuineIntel", ("avx2", "fma"), False),
        ("auto", "", (), False),
        ("torch", "AuthenticAMD", ("avx2",), False),
        ("numpy", "GenuineIntel", ("avx2", "avx512f"), True),
    ],
)
def test_auto_takes_numpys_blas_on_the_amd_cpus_it_was_measured_on(choice, vendor, flags, numpy):
    assert blas.wants_numpy(choice, CPU("a CPU", vendor, flags=flags)) is numpy


def test_the_choice_is_a_setting_with_its_bounds():
    assert RuntimeConfig().logits_blas == "auto"
    with pytest.raises(UserError, match="logits_blas|not one of"):
        RuntimeConfig(logits_blas="openblas")


def test_numpys_logits_equal_torchs_product_within_float32_rounding(numpy_logits):
    g = torch.Generator().manual_seed(0)
    rows, weight = torch.randn(37, 64, generator=g), torch.randn(501, 64, generator=g, requires_grad=True)
    out = torch.full((37, 501), float("nan"))
    got = blas.logits(rows, weight, out)
    assert got.data_ptr() == out.data_ptr()  # written in place, no copy
    # float32 sums of 64 products in another order: a few units in the last place of |z| ≈ 8
    torch.testing.assert_close(got, rows @ weight.detach().t(), rtol=1e-5, atol=1e-5)


def test_the_loss_and_its_gradients_through_numpys_blas_equal_the_reference(numpy_logits):
    g = torch.Generator().manual_seed(1)
    t = torch.randn(90, 48, generator=g, requires_grad=True)
    weight = torch.randn(700, 48, generator=g, requires_grad=True)
    bias = torch.randn(700, generator=g, requires_grad=True)
    target = torch.randint(1, 700, (90,), generator=g)
    target[::7] = 0  # padding, skipped
    got = linear_cross_entropy(t, weight, bias, target, chunk_elements=700 * 16)  # 6 chunks
    got.backward()
    grads = [p.grad.clone() for p in (t, weight, bias)]
    for p in (t, weight, bias):
        p.grad = None
    want = F.cross_entropy(F.linear(t, weight, bias), target, ignore_index=0, reduction="sum")
    want.backward()
    # a sum of ~77 losses of ~10 nats: float32 rounding of the logits moves it by well under 1e-3
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-3)
    for mine, ref in zip(grads, (t.grad, weight.grad, bias.grad)):
        torch.testing.assert_close(mine, ref, rtol=1e-4, atol=1e-5)


def test_numpys_blas_runs_one_thread_in_each_of_the_threads_asked_for(numpy_logits):
    # OpenBLAS's own pool would spin beside torch's: one OpenBLAS thread, the rows split over workers
    assert {i["internal_api"]: i["num_threads"] for i in threadpoolctl.threadpool_info()}.get("openblas") == 1
    assert blas.workers() == 1
    blas.choose("numpy", 3)
    assert blas.workers() == 3
    rows, weight = torch.randn(10, 16), torch.randn(7, 16)  # 10 rows over 3 workers: 4, 4 and 2
    torch.testing.assert_close(blas.logits(rows, weight, torch.empty(10, 7)), rows @ weight.t(), rtol=1e-5, atol=1e-5)


def test_releasing_numpys_blas_gives_openblas_its_threads_back():
    """Held to one thread for training's products, OpenBLAS stayed so in the caller's process."""

    def openblas():
        return {i["internal_api"]: i["num_threads"] for i in threadpoolctl.threadpool_info()}.get("openblas")

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        assert blas.choose("numpy", 1) and openblas() == 1
        blas.release()
        assert openblas() == 2 and blas.workers() == 0


def test_torchs_blas_is_used_when_asked(numpy_logits):
    assert not blas.choose("torch", 1) and blas.workers() == 0
    rows, weight = torch.randn(5, 8), torch.randn(9, 8)
    torch.testing.assert_close(blas.logits(rows, weight, torch.empty(5, 9)), rows @ weight.t())


def test_an_overflowing_product_is_inf_without_a_warning_of_numpys(numpy_logits, recwarn):
    """A diverging run's loss names its update in one line; numpy's own warnings would come first."""
    rows, weight = torch.full((3, 4), 1e30), torch.full((5, 4), 1e30)
    out = blas.logits(rows, weight, torch.empty(3, 5))
    assert torch.isinf(out).all()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_translation_leaves_numpys_blas_to_training(overfit):
    """The search's output layer is its own product: a translator starts no BLAS workers, whatever
    its runtime asks (translate -v named numpy's BLAS for its logits)."""
    from nmtkit.translate.translator import Translator

    blas.choose("numpy", 1)
    Translator.from_checkpoints(overfit / "run" / "last.pt", RuntimeConfig(device="cpu", logits_blas="numpy"))
    assert blas.workers() == 0
