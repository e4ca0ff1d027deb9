"""Measured runs in: readers (PyTorch CSVs, Kineto traces, Megatron-LM logs) → one ``MeasuredRun`` →
fitted per-stage costs → the same order simulated under them → the gap. No torch needed."""
