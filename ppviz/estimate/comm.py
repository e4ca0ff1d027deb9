"""Collectives and point-to-point transfers on the two network tiers (NVLink inside a domain, the
network between domains), in seconds.

Ring collectives on n GPUs of per-direction bandwidth B (Thakur et al. 2005; the form NERSC's
transformer-perf-estimates and NVIDIA Calculon use): all-reduce 2(n−1)/n·S/B, all-gather and
reduce-scatter (n−1)/n·S/B with S the full (gathered) size, plus one latency per ring step.
A group that spans several NVLink domains runs hierarchically: k GPUs per domain share the NVLink
part, and between domains every GPU brings its own NIC, so the network part carries S/k per GPU
(NERSC's hierarchical form). Bandwidths are multiplied by the tier's efficiency.

Ranks are ordered as Megatron orders them, tp fastest, then cp, then dp (ep inside dp), then pp:
a group of size n whose members are ``stride`` ranks apart has ``per_domain`` of them in one
NVLink domain.
"""

from __future__ import annotations

from .specs import Gpu


def per_domain(n: int, stride: int, domain: int) -> int:
    """How many of a group's n members (``stride`` ranks apart) share one NVLink domain."""
    if n <= 1:
        return 1
    if stride >= domain:
        return 1
    return max(1, min(n, domain // stride))


def _tiers(gpu: Gpu, n: int, k: int) -> tuple[float, float, int, int]:
    """(NVLink B, network B, NVLink members k, domains n/k) with efficiencies applied."""
    bnv = gpu.nvlink_bytes_per_s * gpu.nvlink_efficiency
    bnet = gpu.network_bytes_per_s * gpu.network_efficiency
    return bnv, bnet, k, max(1, n // k)


def all_reduce_s(size_bytes: float, n: int, k: int, gpu: Gpu) -> float:
    """Ring all-reduce of ``size_bytes`` on n GPUs, k of them per NVLink domain."""
    if n <= 1 or size_bytes <= 0:
        return 0.0
    bnv, bnet, k, nodes = _tiers(gpu, n, k)
    t = 2 * (k - 1) / k * size_bytes / bnv + 2 * (k - 1) * gpu.nvlink_latency_s
    if nodes > 1:
        t += 2 * (nodes - 1) / nodes * size_bytes / k / bnet + 2 * (nodes - 1) * gpu.network_latency_s
    return t


def all_gather_s(size_bytes: float, n: int, k: int, gpu: Gpu) -> float:
    """Ring all-gather (or reduce-scatter) whose gathered result is ``size_bytes``."""
    return all_reduce_s(size_bytes, n, k, gpu) / 2


reduce_scatter_s = all_gather_s


def broadcast_s(size_bytes: float, n: int, k: int, gpu: Gpu) -> float:
    """Pipelined (chain) broadcast of ``size_bytes`` from one of n GPUs, k per NVLink domain, as
    NCCL runs it (its broadcast's bus bandwidth equals its algorithm bandwidth): the message
    streams through the domain once at NVLink speed; between domains the k members each carry
    S/k on their own NIC; plus one latency per hop."""
    if n <= 1 or size_bytes <= 0:
        return 0.0
    bnv, bnet, k, nodes = _tiers(gpu, n, k)
    t = 0.0
    if k > 1:
        t += size_bytes / bnv + (k - 1) * gpu.nvlink_latency_s
    if nodes > 1:
        t += size_bytes / k / bnet + (nodes - 1) * gpu.network_latency_s
    return t


reduce_s = broadcast_s  # the same chain run backwards, adding as it goes


def all_to_all_s(send_bytes: float, n: int, k: int, gpu: Gpu) -> float:
    """All-to-all where each GPU holds ``send_bytes`` spread evenly over the n members: the
    NVLink and network shares move at once, so the slower of them bounds the time."""
    if n <= 1 or send_bytes <= 0:
        return 0.0
    bnv, bnet, k, nodes = _tiers(gpu, n, k)
    inside = send_bytes * (k - 1) / n / bnv + (gpu.nvlink_latency_s if k > 1 else 0.0)
    outside = send_bytes * (n - k) / n / bnet + (gpu.network_latency_s if nodes > 1 else 0.0)
    return max(inside, outside)


def p2p_s(size_bytes: float, same_domain: bool, gpu: Gpu) -> float:
    """One message between pipeline neighbours: latency + bytes / bandwidth on its tier."""
    if same_domain:
        return gpu.nvlink_latency_s + size_bytes / (gpu.nvlink_bytes_per_s * gpu.nvlink_efficiency)
    return gpu.network_latency_s + size_bytes / (gpu.network_bytes_per_s * gpu.network_efficiency)


def same_domain(rank_a: int, rank_b: int, domain: int) -> bool:
    return rank_a // domain == rank_b // domain
