"""Running a model: token-exact requests, teacher-forced scoring that keeps only scored logits,
the decoding loops, the decoder seen layer by layer, and how processes share the work."""
