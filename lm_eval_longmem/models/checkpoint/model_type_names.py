"""The `model_type` names of checkpoints whose architecture transformers does not ship, for the
modules that recognise such a checkpoint from its config alone (model_types.py registers their
classes before one loads)."""

STUDY_MODEL_TYPE = "llama_with_landmark"  # the Landmark study's official LlamaLandmarkConfig (a Llama)
