"""Model types transformers does not know, registered with its Auto classes before a checkpoint of
one loads: FoX's and its Transformer baseline's (models/fox/), and the Landmark study's
`llama_with_landmark` (models/landmark/study_format.py). Each registers when its module is
imported; this is the one call every loading path makes (idempotent)."""


def register_model_types() -> None:
    import lm_eval_longmem.models.fox  # noqa: F401  (registers on import)
    import lm_eval_longmem.models.landmark.study_format  # noqa: F401  (registers on import)
