"""Landmark's `top_k` with `retrieval=false` would be ignored without a word: refused in one line;
left out, it stands for the study's 5 (also in run-folder names)."""

import pytest

from lm_eval_longmem.models.method_registry import MethodArgumentError, build_method


def test_top_k_with_retrieval_off_is_refused():
    with pytest.raises(MethodArgumentError, match="top_k=3 has no effect with retrieval=false"):
        build_method("landmark", {"retrieval": "false", "top_k": 3})


def test_top_k_left_out_is_the_study_s_five_with_or_without_retrieval():
    assert build_method("landmark", {}).args.top_k == 5
    assert build_method("landmark", {"retrieval": "false"}).args.top_k == 5
    assert build_method("landmark", {"top_k": 2}).args.top_k == 2


def test_the_ablation_on_a_trained_export_drops_its_recorded_top_k(tiny_landmark_dir, tmp_path):
    """An export records top_k; `pretrained=<export>,retrieval=false` (the documented ablation) runs."""
    import json
    import shutil

    from lm_eval_longmem.models.checkpoint.method_record import ARGS_KEY, METHOD_KEY
    from lm_eval_longmem.models.method_registry.resolution import resolve_method

    export = shutil.copytree(tiny_landmark_dir, tmp_path / "export")
    config = json.loads((export / "config.json").read_text())
    config.update({METHOD_KEY: "landmark", ARGS_KEY: {"block_size": 4, "top_k": 2}})
    (export / "config.json").write_text(json.dumps(config))
    ablation = resolve_method({"pretrained": str(export), "retrieval": "false"}).build()
    assert ablation.args.retrieval is False and ablation.args.block_size == 4
    assert resolve_method({"pretrained": str(export)}).build().args.top_k == 2
    with pytest.raises(MethodArgumentError, match="has no effect"):
        resolve_method({"pretrained": str(export), "retrieval": "false", "top_k": 2})
