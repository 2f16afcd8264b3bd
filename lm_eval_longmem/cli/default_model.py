"""`lm-eval-longmem default-model`: the embedded default model's folder, for models other than
`longmem` (`--model hf --model_args pretrained=$(lm-eval-longmem default-model)`), which run
offline on it as on any local checkpoint."""

from __future__ import annotations

import argparse

HELP = "print the folder of the embedded default model (converted on first use), e.g. for --model hf"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem default-model",
        description=HELP[0].upper() + HELP[1:] + ".",
        epilog="example:\n  lm_eval --model hf --model_args pretrained=$(lm-eval-longmem default-model) "
        "--tasks forgetting_curve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.parse_args(argv)

    from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

    print(default_model_dir())
    return 0
