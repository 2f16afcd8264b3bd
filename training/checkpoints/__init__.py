"""What a run saves to resume from: accelerate's state plus the recipe it was made under, written
whole or not at all (`resumable.py`), with accelerate's notice about tied weights kept out of
each save where the model ties them by design (`tied_weights_notice.py`)."""
