"""The defaults of every surface (``ppviz estimate``, ``render --model``, ``search``, the pages and
``default_layout`` in Python), defined once: what Megatron-LM users run, and the memory a run
cannot use.

- Selective recomputation (Korthikanti et al. 2022; Megatron's ``--recompute-activations``): it
  costs a few percent and removes the attention's s² activation.
- Sequence parallelism whenever tp > 1 (``--sequence-parallel``, what Megatron's own examples set).
- ZeRO-1, Megatron's distributed optimizer (``--use-distributed-optimizer``): the optimizer state
  sharded over the data-parallel group.
- A reserve of HBM no training process can use (``RESERVE_BYTES``, see docs/real-units).
"""

from __future__ import annotations

from ..units import GIB, MIB

RECOMPUTE = "selective"
SEQUENCE_PARALLEL = True  # when tp > 1 under 1D tensor parallelism (it needs tp > 1; 2D splits the sequence itself)
ZERO = 1
SCHEDULE = "1f1b"
COMPARED = ("1f1b", "zb-v")  # the schedules a page compares first
SEARCHED = None  # the schedules a search ranks: None is every schedule of the registry

# What a training process cannot hand to its tensors, per GPU:
CUDA_CONTEXT_BYTES = 512 * MIB  # the CUDA context with lazy module loading: 300–700 MiB (PyTorch #20532, #107667)
NCCL_BYTES = 1 * GIB  # NCCL buffers: NCCL_BUFFSIZE 4 MiB per channel and peer, over the TP, DP and PP communicators
FRAGMENTATION_BYTES = 1.5 * GIB  # the caching allocator's blocks reserved but not allocated (2 MiB rounding, 20 MiB
# large blocks) under a training step's varying sizes
RESERVE_BYTES = CUDA_CONTEXT_BYTES + NCCL_BYTES + FRAGMENTATION_BYTES  # 3 GiB


def sequence_parallel(tp: int, tp_mode: str = "1d") -> bool:
    """The default sequence parallelism of a layout: on when it can be (tp > 1, 1D)."""
    return SEQUENCE_PARALLEL and tp > 1 and tp_mode == "1d"
