"""The torch modules the approaches train, apart from them because they need torch at import
and the approaches are imported to read a recipe, before torch loads: the segment-by-segment
causal LM of `infini`, the landmark causal LM of `landmark`, CLEX's forward at a sampled factor,
and LongLoRA's shifted sparse attention. Each approach imports its module inside `build`."""
