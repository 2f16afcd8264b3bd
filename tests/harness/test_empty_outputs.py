"""The count of empty answers per task: a warning only when at least half are empty."""

import logging

from lm_eval.api.instance import Instance

from lm_eval_longmem.harness.empty_outputs import EmptyAnswerCounter


def _requests(task, n):
    return [Instance("generate_until", {}, ("prompt", {}), i, metadata=(task, i, 1)) for i in range(n)]


def test_half_empty_warns_less_does_not(caplog):
    counter = EmptyAnswerCounter()
    answers = {"mostly_empty": ["", " ", "text", "\n"], "fine": ["a", "b", "", "c"]}
    for task, given in answers.items():
        counter.wrap(lambda requests, given=given: list(given))(_requests(task, 4))
    with caplog.at_level(logging.WARNING):
        report = counter.report(apply_chat_template=False)
    assert report["fine"] == {"empty": 1, "generated": 4}
    assert report["mostly_empty"]["empty"] == 3 and "--apply_chat_template" in report["mostly_empty"]["likely_cause"]
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["mostly_empty"]


def test_with_the_chat_template_the_cause_points_elsewhere():
    counter = EmptyAnswerCounter()
    counter.wrap(lambda requests: [""])(_requests("t", 1))
    cause = counter.report(apply_chat_template=True)["t"]["likely_cause"]
    assert "--apply_chat_template" not in cause and "--gen_kwargs" in cause
