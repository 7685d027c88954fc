"""Joey NMT's data path and model, probed by hand, in its own venv (bench/peers/install.sh joeynmt):

    $BENCH_DIR/joeynmt/venv/bin/python bench/peers/joey_probe.py batches CONFIG
    $BENCH_DIR/joeynmt/venv/bin/python bench/peers/joey_probe.py one-batch CONFIG [--steps 100] [--cut K]
    $BENCH_DIR/joeynmt/venv/bin/python bench/peers/joey_probe.py minimal CONFIG [--steps 100] [--cut K]

CONFIG is a configuration bench-sweep wrote (``$BENCH_DIR/marian-demo/sweep/joeynmt-*/config.yaml``).
``batches`` prints Joey NMT's vocabularies and specials, its first training batch back as words
(source, decoder input, targets), the share of <unk>, and the untrained model's loss per target
unit beside log |V|. ``one-batch`` trains Joey NMT's own model (its forward and loss) on that one
batch alone with Adam (``--lr``, 1e-3): a model wired right drives the loss far below the unigram level; a
decoder that cannot see its inputs stays there. ``minimal`` trains, on the same batch and in the
same way, a plain PyTorch GRU encoder-decoder of the same sizes (no attention): what the batch
allows. ``--cut K`` keeps the first K target positions.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from joeynmt.config import load_config, parse_global_args
from joeynmt.prediction import prepare


def first_batch(config: Path) -> tuple[Any, Any]:
    cfg = load_config(config)
    cfg["model_dir"] = tempfile.mkdtemp(prefix="joey-probe-")  # Joey writes its vocabularies there
    args = parse_global_args(cfg, rank=0, mode="train")
    model, train, _dev, _test = prepare(args, rank=0, mode="train")
    pad, eos = model.trg_vocab.pad_index, model.trg_vocab.eos_index
    it = train.make_iter(batch_size=80, batch_type="sentence", seed=42, shuffle=True, pad_index=pad, eos_index=eos)
    batch = next(iter(it))
    batch.sort_by_src_length()  # as Joey NMT's training step does
    return model, batch


def loss_of(model: Any, batch: Any, trg: Any, trg_input: Any, trg_mask: Any) -> Any:
    return model(
        return_type="loss",
        src=batch.src,
        trg=trg,
        trg_input=trg_input,
        src_mask=batch.src_mask,
        src_length=batch.src_length,
        trg_mask=trg_mask,
    )[0]


def batches(config: Path) -> None:
    model, b = first_batch(config)
    sv, tv = model.src_vocab, model.trg_vocab
    print(f"vocabularies: {len(sv)} / {len(tv)}; first {sv._itos[:6]} / {tv._itos[:6]}")
    print(f"specials: unk {tv.unk_index}, pad {tv.pad_index}, bos {tv.bos_index}, eos {tv.eos_index}")
    print(f"batch: src {tuple(b.src.shape)}, trg_input {tuple(b.trg_input.shape)}, trg {tuple(b.trg.shape)}")
    unk_src = (b.src == sv.unk_index).float().mean().item()
    unk_trg = (b.trg == tv.unk_index).float().mean().item()
    print(f"<unk>: {unk_src:.4f} of source units, {unk_trg:.4f} of targets")
    for i in range(2):
        print("SRC   :", " ".join(sv._itos[j] for j in b.src[i].tolist()))
        print("TRG_IN:", " ".join(tv._itos[j] for j in b.trg_input[i].tolist()))
        print("TRG   :", " ".join(tv._itos[j] for j in b.trg[i].tolist()))
    model.eval()
    with torch.no_grad():
        loss = loss_of(model, b, b.trg, b.trg_input, b.trg_mask)
    print(f"untrained loss per target unit {loss.item() / b.ntokens:.3f}; log |V| {math.log(len(tv)):.3f}")


def one_batch(config: Path, steps: int, cut: int, lr: float = 1e-3) -> None:
    torch.manual_seed(1)
    model, b = first_batch(config)
    trg, trg_input, trg_mask = b.trg, b.trg_input, b.trg_mask
    if cut:
        trg, trg_input, trg_mask = trg[:, :cut], trg_input[:, :cut], trg_mask[..., :cut]
    tokens = int((trg != model.trg_vocab.pad_index).sum())
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    started = time.time()
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = loss_of(model, b, trg, trg_input, trg_mask)
        (loss / tokens).backward()
        opt.step()
        if step in (1, 10, 25, 50, 100, 200, 400) or step == steps:
            print(f"step {step}: loss per target unit {loss.item() / tokens:.3f} ({time.time() - started:.0f} s)")


class Minimal(torch.nn.Module):
    """A bidirectional GRU encoder whose last states start a GRU decoder: the least a batch needs."""

    def __init__(self, src_vocab: int, trg_vocab: int, size: int = 256):
        super().__init__()
        self.src_embed, self.trg_embed = torch.nn.Embedding(src_vocab, size), torch.nn.Embedding(trg_vocab, size)
        self.encoder = torch.nn.GRU(size, size, batch_first=True, bidirectional=True)
        self.bridge = torch.nn.Linear(2 * size, size)
        self.decoder = torch.nn.GRU(size, size, batch_first=True)
        self.out = torch.nn.Linear(size, trg_vocab)

    def forward(self, src: Any, lengths: Any, trg_input: Any) -> Any:
        packed = torch.nn.utils.rnn.pack_padded_sequence(self.src_embed(src), lengths.cpu(), batch_first=True)
        _, h = self.encoder(packed)
        start = torch.tanh(self.bridge(torch.cat([h[0], h[1]], -1))).unsqueeze(0)
        states, _ = self.decoder(self.trg_embed(trg_input), start)
        return torch.log_softmax(self.out(states), -1)


def minimal(config: Path, steps: int, cut: int, lr: float = 1e-3) -> None:
    torch.manual_seed(1)
    joey, b = first_batch(config)
    pad = joey.trg_vocab.pad_index
    trg, trg_input = (b.trg[:, :cut], b.trg_input[:, :cut]) if cut else (b.trg, b.trg_input)
    tokens = int((trg != pad).sum())
    model = Minimal(len(joey.src_vocab), len(joey.trg_vocab))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    nll = torch.nn.NLLLoss(ignore_index=pad, reduction="sum")
    started = time.time()
    for step in range(1, steps + 1):
        opt.zero_grad()
        logp = model(b.src, b.src_length, trg_input)
        loss = nll(logp.flatten(0, 1), trg.flatten())
        (loss / tokens).backward()
        opt.step()
        if step in (1, 10, 25, 50, 100, 200, 400) or step == steps:
            print(f"step {step}: loss per target unit {loss.item() / tokens:.3f} ({time.time() - started:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("probe", choices=["batches", "one-batch", "minimal"])
    ap.add_argument("config", type=Path)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--cut", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()
    if args.probe == "batches":
        batches(args.config)
    elif args.probe == "one-batch":
        one_batch(args.config, args.steps, args.cut, args.lr)
    else:
        minimal(args.config, args.steps, args.cut, args.lr)


if __name__ == "__main__":
    main()
