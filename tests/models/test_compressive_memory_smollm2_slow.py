"""Slow tier: Infini-attention on the real SmolLM2-135M (30 layers, 9 query / 3 key-value heads).

The first segment is the base model; in bfloat16 over 8 segments the memory stays finite and
float32. Run with: ./scripts/test.sh --slow
"""

import pytest
import torch

pytestmark = pytest.mark.slow


def test_smollm2_first_segment_is_the_base_model_and_bf16_memory_stays_finite():
    from transformers import AutoModelForCausalLM

    from lm_eval_longmem.models.checkpoint.default_model import default_model_dir
    from lm_eval_longmem.models.method_registry import build_method

    ids = torch.randint(100, 40000, (8 * 64,), generator=torch.Generator().manual_seed(0)).tolist()
    for dtype in (torch.float32, torch.bfloat16):
        model = AutoModelForCausalLM.from_pretrained(default_model_dir(), dtype=dtype).eval()
        method = build_method("infini", {"segment_length": 64})
        method.prepare_model(model)
        recurrence = method.make_scorer(model).start_sequence()
        with torch.no_grad():
            logits = torch.cat(
                [recurrence.decoder.logits(recurrence.feed(ids[i : i + 64])) for i in range(0, len(ids), 64)]
            )
            if dtype == torch.float32:
                reference = model(torch.tensor([ids[:64]])).logits[0]
                assert torch.allclose(logits[:64], reference, atol=1e-3)
        assert recurrence.segments_folded == 8 and torch.isfinite(logits).all()
        assert all(m.matrix.dtype == torch.float32 and torch.isfinite(m.matrix).all() for m in recurrence.memories)
