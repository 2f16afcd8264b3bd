"""RoPE machinery shared by the context-extension methods: frequency formulas, config editing,
our own rope types, re-rotation of cached keys, and the frozen-base dynamic NTK update."""
