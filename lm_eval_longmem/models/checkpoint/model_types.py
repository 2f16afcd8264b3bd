"""Model types transformers does not know, registered with its Auto classes before a checkpoint of
one loads: FoX's and its Transformer baseline's (models/fox/), and the Landmark study's
`llama_with_landmark` (models/landmark/study_format.py); and CLEX's rope type, whose "Missing
validation function" warning transformers prints at every config read is dropped from here on
(models/clex/load_report.py). Every loading path (the `longmem` model,
the tasks' view of the model, training) calls this first; it is idempotent."""


def register_model_types() -> None:
    from lm_eval_longmem.models.fox import register_fox
    from lm_eval_longmem.models.landmark.study_format import register_study_format

    register_fox()
    register_study_format()
    from lm_eval_longmem.models.clex.load_report import drop_clex_rope_validation_message

    drop_clex_rope_validation_message()  # the rope type transformers lacks: before any config is read
