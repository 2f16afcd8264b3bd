"""`rope_extension`: full fine-tune of a model whose RoPE the recipe's method (pi, ntk, yarn, ...)
has extended, as the controlled study trains its exact-attention baselines."""

from ..errors import TrainingError
from .base import Approach, load_pretrained


class RopeExtension(Approach):
    name = "rope_extension"
    summary = "Full fine-tune of a model whose RoPE the recipe's method (pi, ntk, yarn, ...) extends"

    def check(self, recipe):
        if not recipe.method:
            raise TrainingError("approach=rope_extension needs method= (pi, ntk, yarn, ...).")
        super().check(recipe)

    def build(self, recipe):
        return load_pretrained(recipe)
