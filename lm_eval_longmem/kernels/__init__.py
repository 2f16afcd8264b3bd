"""Triton kernels for the attention variants, each beside the PyTorch reference it is tested
against (DESIGN.md section 6). The first kernels arrive with the methods that need them."""
