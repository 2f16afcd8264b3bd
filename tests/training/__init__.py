"""Tests of the training module: recipes, the loop, resumption, checkpoints, exports, kills."""
