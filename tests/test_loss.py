"""The fused output layer: the same loss and gradients as logits + cross-entropy, without the logits."""

import pytest
import torch
import torch.nn.functional as F

from nmtkit.models.attention import _Energy
from nmtkit.models.loss import linear_cross_entropy, shortlist, shortlisted_cross_entropy


def inputs(seed=0, n=37, width=6, K=11):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(n, width, generator=g, dtype=torch.double, requires_grad=True)
    W = torch.randn(K, width, generator=g, dtype=torch.double, requires_grad=True)
    b = torch.randn(K, generator=g, dtype=torch.double, requires_grad=True)
    y = torch.randint(0, K, (n,), generator=g)
    y[::5] = 0  # padding rows
    return t, W, b, y


@pytest.mark.parametrize("chunk_elements", [11, 5 * 11, 10_000])  # 1 row, 5 rows, all rows at once
@pytest.mark.parametrize("drop_padding", [True, False])  # the CPU's way, and the GPU's (no nonzero)
def test_equals_logits_then_cross_entropy(chunk_elements, drop_padding):
    t, W, b, y = inputs()
    fused = linear_cross_entropy(t, W, b, y, ignore_index=0, chunk_elements=chunk_elements, drop_padding=drop_padding)
    (3 * fused).backward()
    grads = [x.grad.clone() for x in (t, W, b)]
    for x in (t, W, b):
        x.grad = None
    plain = F.cross_entropy(F.linear(t, W, b), y, ignore_index=0, reduction="sum")
    (3 * plain).backward()
    assert torch.allclose(fused, plain, atol=1e-10)
    for got, want in zip(grads, (t.grad, W.grad, b.grad)):
        assert torch.allclose(got, want, atol=1e-10)
    assert (grads[0][::5] == 0).all()  # padding rows get no gradient


def test_without_grad_and_without_bias():
    t, W, _, y = inputs(1)
    with torch.no_grad():
        value = linear_cross_entropy(t, W, None, y)
    assert not value.requires_grad
    assert torch.allclose(value, F.cross_entropy(t @ W.T, y, ignore_index=0, reduction="sum"))


def test_bf16_autocast_stays_close():
    t, W, b, y = (x.detach().float() if x.is_floating_point() else x for x in inputs(2, n=64, width=32, K=50))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = linear_cross_entropy(t, W, b, y)
    assert low.dtype == torch.float32
    assert abs(
        float(low) - float(F.cross_entropy(F.linear(t, W, b), y, ignore_index=0, reduction="sum"))
    ) < 0.02 * float(low)


def test_attention_energy_gradient_is_exact():
    g = torch.Generator().manual_seed(3)
    keys = torch.randn(3, 5, 4, generator=g, dtype=torch.double, requires_grad=True)
    q = torch.randn(3, 4, generator=g, dtype=torch.double, requires_grad=True)
    v = torch.randn(4, generator=g, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(_Energy.apply, (keys, q, v))
    assert torch.allclose(_Energy.apply(keys, q, v), torch.tanh(keys + q.unsqueeze(1)) @ v)


def test_a_shortlist_of_the_whole_vocabulary_is_the_full_softmax():
    t, W, b, y = inputs(4)
    words = shortlist(y, vocab_size=11, size=11)
    assert words.tolist() == list(range(11))
    sampled = shortlisted_cross_entropy(t, W, b, y, words)
    sampled.backward()
    grads = [x.grad.clone() for x in (t, W, b)]
    for x in (t, W, b):
        x.grad = None
    full = linear_cross_entropy(t, W, b, y)
    full.backward()
    assert torch.equal(sampled, full)
    for got, want in zip(grads, (t.grad, W.grad, b.grad)):
        assert torch.equal(got, want)


def test_a_shortlist_holds_the_targets_and_only_its_rows_learn():
    t, W, b, y = inputs(5, n=8, K=40)
    torch.manual_seed(0)
    words = shortlist(y, vocab_size=40, size=12)
    assert len(words) == 12 and words[0] == 0 and (words.diff() > 0).all()  # sorted, <pad> first
    assert set(y.tolist()) <= set(words.tolist())
    torch.manual_seed(0)
    assert torch.equal(shortlist(y, 40, 12), words)  # drawn from the global generator
    loss = shortlisted_cross_entropy(t, W, b, y, words)
    rows = y != 0
    logits = F.linear(t, W, b)[:, words]
    local = torch.searchsorted(words, y)
    assert torch.allclose(loss, F.cross_entropy(logits[rows], local[rows], reduction="sum"))
    assert loss < linear_cross_entropy(t, W, b, y)  # fewer words to share the mass with
    loss.backward()
    others = torch.ones(40, dtype=torch.bool)
    others[words] = False
    assert (W.grad[others] == 0).all() and (b.grad[others] == 0).all()
    assert (W.grad[words[1:]] != 0).any(dim=1).all()


def test_a_shortlist_larger_than_the_batch_words_is_topped_up_at_random():
    y = torch.tensor([3, 3, 5, 0])
    torch.manual_seed(1)
    first = shortlist(y, 1000, 50)
    second = shortlist(y, 1000, 50)
    assert len(first) == len(second) == 50 and not torch.equal(first, second)
    assert len(shortlist(y, 1000, 2)) == 3  # never smaller than the targets
