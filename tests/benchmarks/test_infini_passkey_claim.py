"""benchmarks/infini_passkey_claim.py at a tiny size: both training stages, the first-segment
depths, all five models through the real passkey task, the table and the verdict; a rerun
reuses the exports and every stored cell."""

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.helpers.tiny_llama import build_tiny_model

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "infini_passkey_claim.py"


def load_script():
    if str(SCRIPT.parent) not in sys.path:  # as when run as a script: its helpers sit beside it
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("infini_passkey_claim", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wilson_interval_by_hand():
    claim = load_script()
    low, high = claim.wilson(0, 20)
    assert low == 0.0 and high == pytest.approx(0.1611, abs=1e-4)  # 3.84 / 23.84
    low, high = claim.wilson(10, 20)
    assert (low, high) == (pytest.approx(0.2993, abs=1e-4), pytest.approx(0.7007, abs=1e-4))


@pytest.mark.slow  # two training stages and five evaluations: a whole benchmark pipeline
def test_tiny_pipeline_trains_evaluates_five_models_and_resumes(tmp_path, corpus_file, capsys, monkeypatch):
    claim = load_script()
    model = build_tiny_model(tmp_path / "tiny", max_position_embeddings=1024)
    argv = [
        "--model",
        str(model),
        "--pretrain-data",
        str(corpus_file),
        "--segment",
        "64",
        "--train-length",
        "128",
        "--pretrain-steps",
        "2",
        "--passkey-steps",
        "2",
        "--keys",
        "2",
        "--work",
        str(tmp_path / "work"),
    ]
    table = claim.main(argv)
    out = capsys.readouterr().out
    assert set(table) == {f"{c}|{L}|{w}" for c in "abcde" for L in (128, 256, 512) for w in ("start", "end")}
    for cell in table.values():
        assert 0 <= cell["correct"] <= 2 and cell["interval"][0] <= cell["interval"][1]
        assert cell["key_tokens"][1] < 64  # the key line lies inside the first segment
    for L in (128, 256, 512):
        assert table[f"a|{L}|start"]["depth"] == 0 < table[f"a|{L}|end"]["depth"]
    assert "verdict: (a)" in out and "gates sigmoid(beta)" in out and "fine-tune loss:" in out

    def no_evaluation(*args, **kwargs):
        raise AssertionError("a stored cell was evaluated again")

    monkeypatch.setattr(claim, "evaluate_cell", no_evaluation)
    assert claim.main(argv) == table
    assert "export found" in capsys.readouterr().out
