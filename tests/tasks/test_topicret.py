"""TopicRet: L-Eval's prompt and score, the overlong policies, loading files in the real schema."""

import logging

import pytest

from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError
from lm_eval_longmem.data.leval_topicret import TopicDocument, load_topicret
from lm_eval_longmem.tasks.prompt_budget import PromptBudget
from lm_eval_longmem.tasks.task_options import TaskOptionError
from lm_eval_longmem.tasks.topicret.leval_format import leval_truncate, longchat_prompt, user_message
from lm_eval_longmem.tasks.topicret.protocol import prepare
from lm_eval_longmem.tasks.topicret.scoring import topic_correct
from lm_eval_longmem.tasks.topicret.task import TopicRetTask, mean_of_positions
from tests.helpers.data_fixtures import topicret_record, topicret_rows, write_topicret_fixture

QUESTION = "What is the first topic we discussed? Only give me the topic name. Do not summarize yourself."


def test_prompt_is_l_eval_s_longchat_prompt_exactly():
    expected = (
        "A chat between a curious user and an artificial intelligence assistant.The assistant gives helpful, "
        "detailed, and polite answers to the user's questions. USER: Below is a record of our previous conversation "
        "on many different topics. You are the ASSISTANT, and I am the USER. At the beginning of each topic, the USER "
        "will say 'I would like to discuss the topic of <TOPIC>'. Memorize each <TOPIC>. At the end of the record, I "
        "will ask you to retrieve the first/second/third topic names. Now the record start. "
        "RECORD\n\n" + QUESTION + " \nASSISTANT: "
    )
    assert longchat_prompt("RECORD", QUESTION) == expected
    assert user_message("RECORD", QUESTION) == expected[expected.index("Below is") : expected.index(" \nASSISTANT")]


@pytest.mark.parametrize(
    "prediction, topic, correct",
    [
        ('The first topic discussed was "The role of art in society."', "The role of art in society", True),
        ("the ROLE of art in   society", "The role of art in society", True),  # case and spaces ignored
        ("TheRoleOfArtInSociety", "The role of art in society", True),
        ("The role of art", "The role of art in society", False),
        ("\nThe role of art in society", "The role of art in society", True),  # first line longer than 1 char
        (".\nThe role of art in society", "The role of art in society", True),  # 1-char lines are passed over
        ("Sports\nThe role of art in society", "The role of art in society", False),  # only that line counts
        ("The role-of art in society", "The role of art in society", False),  # punctuation is not removed
        ("3.0", "3", True),  # L-Eval compares numbers as numbers
    ],
)
def test_l_eval_exam_score(prediction, topic, correct):
    assert topic_correct(prediction, topic) is correct


def test_truncation_keeps_the_first_words_in_steps_of_250():
    document = " ".join(f"w{i}" for i in range(2000))
    seen = []

    def fits(text):
        seen.append(len(text.split(" ")))
        return len(text.split(" ")) <= 1300

    kept = leval_truncate(document, fits, word_budget=1800)
    assert seen == [2000, 1800, 1550, 1300]
    assert kept == " ".join(f"w{i}" for i in range(1300))
    assert leval_truncate(document, lambda t: len(t) < 5, word_budget=600) is None  # never a negative slice
    assert leval_truncate("short", lambda t: True, word_budget=1) == "short"


@pytest.fixture(scope="module")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def documents(turns):
    rows = topicret_rows(3, topics_per_document=4, turns_per_topic=1)
    rows["input"][1] = topicret_record(["the history of jazz"] * 4, turns_per_topic=turns)
    return [
        TopicDocument(i, tuple(q), tuple(o)) for i, q, o in zip(rows["input"], rows["instructions"], rows["outputs"])
    ]


def test_overlong_records_are_skipped_and_counted(tiny_tokenizer, caplog):
    budget = PromptBudget(tiny_tokenizer, context_length=800, generated=20)
    with caplog.at_level(logging.WARNING):
        kept, skipped = prepare(documents(turns=40), budget, "skip")
    assert skipped == 1 and [d.index for d in kept] == [0, 2] and not any(d.truncated for d in kept)
    assert "skipped 1 of 3 records" in caplog.text


def test_overlong_records_are_truncated_with_l_eval_s_rule(tiny_tokenizer, caplog):
    budget = PromptBudget(tiny_tokenizer, context_length=800, generated=20)
    original = documents(turns=40)
    with caplog.at_level(logging.WARNING):
        kept, skipped = prepare(original, budget, "truncate")
    assert skipped == 0 and [d.truncated for d in kept] == [False, True, False]
    cut = kept[1].document
    assert original[1].document.startswith(cut) and len(cut) < len(original[1].document)
    assert all(budget.fits(longchat_prompt(cut, q)) for q in kept[1].questions)
    assert "truncated 1 of 3 records" in caplog.text


def test_nothing_fits_is_an_error(tiny_tokenizer):
    budget = PromptBudget(tiny_tokenizer, context_length=60, generated=20)
    with pytest.raises(TaskOptionError, match="none of the 3 records fits"):
        prepare(documents(turns=1), budget, "skip")


@pytest.mark.parametrize("name", ["topic_retrieval_longchat.parquet", "topic_retrieval_longchat.jsonl"])
def test_local_copies_in_the_real_schema_load(tmp_path, name):
    path = write_topicret_fixture(tmp_path / name, topicret_rows(2))
    for location in (path, tmp_path):  # the file itself, or the directory holding it
        docs = load_topicret(str(location))
        assert len(docs) == 2 and len(docs[0].questions) == 3 and docs[0].topics[0] == "The history of jazz"


def test_a_local_copy_without_the_columns_is_refused(tmp_path):
    write_topicret_fixture(tmp_path / "topic_retrieval_longchat.jsonl", {"text": ["x"]})
    with pytest.raises(DatasetUnavailableError, match="input"):
        load_topicret(str(tmp_path))


def test_mean_acc_is_the_mean_of_the_three_positions():
    records = [
        {"position": 0, "score": 1.0},
        {"position": 0, "score": 1.0},
        {"position": 1, "score": 0.0},
        {"position": 2, "score": 1.0},
    ]
    assert mean_of_positions(records) == pytest.approx((1.0 + 0.0 + 1.0) / 3)


def test_task_documents_prompts_and_chat_template(tiny_model_dir, tmp_path):
    data = write_topicret_fixture(tmp_path / "topic_retrieval_longchat.parquet", topicret_rows(2))
    task = TopicRetTask(
        config={"metadata": {"pretrained": str(tiny_model_dir), "max_length": 2048, "topicret_data": str(data)}}
    )
    docs = list(task.test_docs())
    assert [(d["record"], d["position"]) for d in docs] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    first, second = (task.doc_to_text(d) for d in docs[:2])
    shared = first[: first.index("What is the first")]
    assert second.startswith(shared) and shared.endswith("next topic.\n\n")  # record first, question last
    assert task.fewshot_context(docs[0], 0) == first

    def chat_template(messages, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + (
            "<assistant>" if add_generation_prompt else ""
        )

    chat = task.fewshot_context(docs[0], 0, apply_chat_template=True, chat_template=chat_template)
    assert chat == "<user>" + user_message(task._documents[0], docs[0]["question"]) + "<assistant>"
    assert (
        task.process_results(docs[1], ["The second topic was the future of space tourism."])["second_topic_acc"] == 1.0
    )
