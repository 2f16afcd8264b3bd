"""What a checkpoint is and says: the embedded default model, how many tokens a model takes,
the method it records, and which FoX-family architecture it is."""
