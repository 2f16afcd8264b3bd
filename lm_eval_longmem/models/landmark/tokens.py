"""Give a model and its tokenizer a `<landmark>` token (and a pad token if missing), as the
official training does: the new embedding rows, input and output, are the mean of the old ones."""

from __future__ import annotations

import torch

from lm_eval_longmem.models.landmark.checkpoint import LANDMARK_TOKEN

PAD_TOKEN = "[PAD]"


def add_landmark_token(model, tokenizer) -> int:
    """Add the tokens, resize the embeddings with mean rows, and return the landmark's id."""
    special: dict = {}
    if tokenizer.pad_token is None:
        special["pad_token"] = PAD_TOKEN
    if LANDMARK_TOKEN not in tokenizer.get_vocab():
        special["additional_special_tokens"] = [LANDMARK_TOKEN]
    added = tokenizer.add_special_tokens(special) if special else 0
    old = model.get_input_embeddings().weight.shape[0]
    size = max(len(tokenizer), old)
    if size > old:
        model.resize_token_embeddings(size, mean_resizing=False)
        with torch.no_grad():
            for embedding in {id(e): e for e in (model.get_input_embeddings(), model.get_output_embeddings())}.values():
                if embedding is not None:
                    embedding.weight[old:] = embedding.weight[:old].mean(dim=0, keepdim=True)
    del added
    return tokenizer.convert_tokens_to_ids(LANDMARK_TOKEN)
