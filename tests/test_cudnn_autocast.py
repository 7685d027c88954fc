"""models.cudnn_autocast: under CUDA autocast, torch would run cuDNN's GRUs and LSTMs in float16
(its ``_cudnn_rnn`` wrapper casts to half whatever autocast's dtype); nmtkit's run in float32
there. A CPU runs the same switch with the decision forced, under its own autocast."""

import pytest
import torch

from nmtkit.models import cudnn_autocast
from nmtkit.models.host_free import host_free
from nmtkit.models.layers import CudnnEncoder
from nmtkit.models.stacked_lstm import StackedLSTM


def _inputs():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 6)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    return x, mask


def test_a_cpu_tensor_is_never_halved_not_even_under_autocast():
    x, _ = _inputs()
    with torch.autocast("cpu", torch.bfloat16):
        assert not cudnn_autocast.halves(x)


@pytest.fixture
def as_under_cuda_autocast(monkeypatch):
    """The CPU, deciding as a GPU does: a tensor under its device's autocast would be halved."""
    monkeypatch.setattr(cudnn_autocast, "halves", lambda x: torch.is_autocast_enabled(x.device.type))


def test_where_autocast_would_halve_them_the_lstms_run_in_float32(as_under_cuda_autocast):
    """Packed and padded input, the masked path the graphs use, a bfloat16 input and state: under
    autocast the outputs are float32 and the same, bit for bit, as without autocast."""
    x, mask = _inputs()
    lstm = StackedLSTM(6, 4, 2, batch_first=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, mask.sum(1), batch_first=True, enforce_sorted=False)
    hx = (torch.randn(2, 3, 4), torch.randn(2, 3, 4))
    plain = lstm(x, hx)[0], lstm(packed)[0].data, lstm.masked(x, mask)[0]
    with torch.autocast("cpu", torch.bfloat16):
        half_state = (hx[0].bfloat16(), hx[1].bfloat16())
        ran = lstm(x.bfloat16(), half_state)[0], lstm(packed)[0].data, lstm.masked(x.bfloat16(), mask)[0]
    assert all(r.dtype == torch.float32 for r in ran)
    torch.testing.assert_close(ran[0], lstm(x.bfloat16().float(), tuple(h.float() for h in half_state))[0])
    assert torch.equal(ran[1], plain[1])
    torch.testing.assert_close(ran[2], lstm.masked(x.bfloat16().float(), mask)[0], rtol=0, atol=0)
    assert not torch.equal(plain[0], ran[0])  # the bfloat16 inputs were rounded, and only they


@pytest.mark.parametrize("hostless", [False, True])
def test_where_autocast_would_halve_it_the_cudnn_encoder_runs_in_float32(as_under_cuda_autocast, hostless):
    _, mask = _inputs()
    src = torch.randint(4, 20, mask.shape) * mask
    torch.manual_seed(1)
    encoder = CudnnEncoder(20, 6, 4)
    with host_free() if hostless else torch.no_grad():
        plain = encoder(src, mask)[0]
        with torch.autocast("cpu", torch.bfloat16):
            ran = encoder(src, mask)[0]
    assert ran.dtype == torch.float32 and torch.equal(ran, plain)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: cuDNN's recurrences under its autocast")
def test_under_bf16_autocast_on_a_gpu_the_recurrences_are_float32_and_their_gradients_float32s():
    """Tolerance: gradients within 1e-2 of float32's largest entry (TF32 products; in float16 the
    output would not be float32 in the first place)."""
    x, mask = (t.cuda() for t in _inputs())
    lstm = StackedLSTM(6, 4, 2, batch_first=True).cuda()
    grads = []
    for autocast in (False, True):
        lstm.zero_grad()
        with torch.autocast("cuda", torch.bfloat16, enabled=autocast):
            assert cudnn_autocast.halves(x) == autocast
            out = lstm(x)[0]
        assert out.dtype == torch.float32
        out.square().sum().backward()
        grads.append([p.grad.clone() for p in lstm.parameters()])
    for exact, got in zip(*grads):
        assert (got - exact).abs().max() <= 1e-2 * exact.abs().max()
