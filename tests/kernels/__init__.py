"""Tests of the forgetting-attention kernels: reference, blocked CPU path, Triton (interpreter and CUDA)."""
