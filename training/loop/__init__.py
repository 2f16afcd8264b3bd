"""The training loop (`training_loop.py`: one script for one process or many) and what it runs
on: the run folder it prepares or resumes in (`run_folder.py`), AdamW and its schedule
(`optimization.py`), the recipe's batch in a DeepSpeed config (`deepspeed_batch.py`), FSDP on CPU
processes (`cpu_fsdp.py`), the weights' moving average (`weight_average.py`) and what a run
reports (`progress.py`)."""
