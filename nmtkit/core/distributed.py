"""The process group of a multi-process run (torchrun), and the collectives training needs.

torchrun (one machine, or several through its rendezvous: ``--nnodes``,
``--rdzv-endpoint``) starts one process per GPU and tells each its place
in environment variables; :func:`launch` reads them. The backend follows the
device each process computes on: NCCL for CUDA, gloo for the CPU (so a
CPU run works on a GPU machine too). Every collective here is called by
every rank at the same update, which is what keeps them from waiting on
each other forever.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Place:
    """Where this process stands: its rank among ``world`` processes, and among the
    ``local_world`` processes of its node."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1

    @property
    def distributed(self) -> bool:
        return self.world > 1


def place() -> Place:
    """This process's place, from torchrun's variables (one process when they are absent)."""
    env = os.environ
    world = int(env.get("WORLD_SIZE", "1"))
    return Place(
        int(env.get("RANK", "0")), world, int(env.get("LOCAL_RANK", "0")), int(env.get("LOCAL_WORLD_SIZE", str(world)))
    )


_JOINED: list[Place] = []  # the place this process joined a group at, once it has


def start(where: Place, device: torch.device) -> None:
    """Join the process group on ``device``'s backend (nothing for a single process)."""
    if not where.distributed or dist.is_initialized():
        return
    if device.type == "cuda":
        # device_id binds the communicator to this GPU at once (no guess from the rank)
        dist.init_process_group("nccl", device_id=device)
    else:
        dist.init_process_group("gloo")
    _JOINED.append(where)


def joined() -> bool:
    """Whether this process has joined a process group (and left it or not)."""
    return bool(_JOINED)


def stop(together: bool = False) -> None:
    """Leave the process group (at the end of a run, or on its error).

    ``together`` (a run that ended well): first wait until every rank is done, since
    gloo aborts a process whose peer closed its sockets while it still worked
    (rank 0 validating and saving while the others had left).
    """
    if dist.is_initialized():
        if together:
            dist.barrier()
        dist.destroy_process_group()


def agree(flag: bool, device: torch.device) -> bool:
    """Rank 0's value of ``flag`` on every rank."""
    return bool(shared(int(flag), device))


def most(number: int, device: torch.device) -> int:
    """The largest ``number`` of any rank (a signal that reached one process only)."""
    value = torch.tensor([number], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return int(value.item())


def shared(number: int, device: torch.device) -> int:
    """Rank 0's ``number`` on every rank."""
    value = torch.tensor([number], device=device)
    dist.broadcast(value, 0)
    return int(value.item())


def gather(mine: Any, world: int) -> list[Any]:
    """Every rank's ``mine``, in rank order, on every rank."""
    if world == 1:
        return [mine]
    everyone: list[Any] = [None] * world
    dist.all_gather_object(everyone, mine)
    return everyone


def summed(values: torch.Tensor, world: int) -> torch.Tensor:
    """``values`` summed over the ranks (every rank gets the sum)."""
    if world > 1:
        values = values.clone()
        dist.all_reduce(values)
    return values


# what gloo and NCCL say when a peer's sockets close under a collective: the peer was killed (or died)
_PEER_GONE = re.compile(r"closed by peer|reset by peer|remote worker|remote process exited", re.IGNORECASE)


def peer_gone(err: BaseException) -> bool:
    """Whether ``err``, raised under a collective of a joined group, says another process has gone
    (killed, failed, or ended early: its own output says why)."""
    return joined() and isinstance(err, RuntimeError) and bool(_PEER_GONE.search(str(err)))
