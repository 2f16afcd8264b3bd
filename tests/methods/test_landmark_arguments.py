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
