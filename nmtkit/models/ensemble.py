"""Several models decoding as one: the search sees a single ``Seq2Seq``.

Each step averages the members' probabilities (not log-probabilities), the
usual ensemble of NMT systems (Bahdanau et al. 2015 do not ensemble; Jean
et al. 2015 and Luong et al. 2015 do). The members' decoder states are
concatenated along the feature axis, so the search reorders them all with
its one ``index_select``; their attention maps are averaged (for
``--replace-unk`` and ``--alignments``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from .base import EncoderOut, Seq2Seq


@dataclass
class EnsembleEncoderOut:
    parts: list[EncoderOut]

    @property
    def mask(self) -> torch.Tensor:
        return self.parts[0].mask

    def repeat(self, k: int) -> EnsembleEncoderOut:
        return EnsembleEncoderOut([p.repeat(k) for p in self.parts])

    def select(self, rows: torch.Tensor) -> EnsembleEncoderOut:
        return EnsembleEncoderOut([p.select(rows) for p in self.parts])


class Ensemble(Seq2Seq):
    def __init__(self, members: list[Seq2Seq]):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.cfg = members[0].cfg
        self.widths: list[int] = []

    @property
    def models(self) -> list[Seq2Seq]:
        """The members, typed (a ModuleList yields plain Modules)."""
        return cast(list[Seq2Seq], list(self.members))

    def encode(self, src: torch.Tensor, mask: torch.Tensor) -> EnsembleEncoderOut:  # type: ignore[override]
        return EnsembleEncoderOut([m.encode(src, mask) for m in self.models])

    def init_state(self, enc: EnsembleEncoderOut) -> torch.Tensor:  # type: ignore[override]
        states = [m.init_state(e) for m, e in zip(self.models, enc.parts)]
        self.widths = [s.shape[1] for s in states]
        return torch.cat(states, 1)

    def restrict_output(self, rows: torch.Tensor | None) -> None:
        for m in self.models:
            m.restrict_output(rows)

    def attention_follows_input(self) -> bool:
        """The members' reading (``search.force`` aligns with each when they differ)."""
        return self.models[0].attention_follows_input()

    def step(
        self,
        y_prev: torch.Tensor,
        state: torch.Tensor,
        enc: EnsembleEncoderOut,  # type: ignore[override]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        logps, states, maps = [], [], []
        for m, s, e in zip(self.models, torch.split(state, self.widths, 1), enc.parts):
            logp, s, alpha = m.step(y_prev, s, e)
            logps.append(logp)
            states.append(s)
            if alpha is not None:
                maps.append(alpha)
        logp = torch.logsumexp(torch.stack(logps), 0) - math.log(len(logps))
        attention = torch.stack(maps).mean(0) if maps else None
        return logp, torch.cat(states, 1), attention
