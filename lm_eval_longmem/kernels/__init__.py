"""Triton kernels for the attention variants, one folder per op, each beside the PyTorch
reference it is tested against (as flash-linear-attention lays out its ops):

* `forgetting_attention/`: causal attention with per-query/per-key additive biases
  (FoX's forget gates; ALiBi and stated-CLM's merge counts have the same form).
* `grouped_softmax/`: Landmark Attention's grouped softmax, in which a block's landmark key gates
  attention to that block, and the retrieval attention around it (on the CPU a C function,
  `retrieval_cpu.c`, built on first use, reads each query's chosen blocks in place).
* `top_keys/`: each query's best keys by q.k over a prefix of the keys (LongCache's recall); on
  the CPU a small C scan (`scan_top_keys.c`, built on first use) ranks ATen's q.k instead.

The C files are built and loaded by `c_library.py`.
"""
