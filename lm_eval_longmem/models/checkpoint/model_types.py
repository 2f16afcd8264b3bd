"""Model types transformers does not know, registered with its Auto classes before a checkpoint of
one loads: FoX's and its Transformer baseline's (models/fox/), and the Landmark study's
`llama_with_landmark` (models/landmark/study_format.py). Every loading path (the `longmem` model,
the tasks' view of the model, training) calls this first; it is idempotent."""


def register_model_types() -> None:
    from lm_eval_longmem.models.fox import register_fox
    from lm_eval_longmem.models.landmark.study_format import register_study_format

    register_fox()
    register_study_format()
