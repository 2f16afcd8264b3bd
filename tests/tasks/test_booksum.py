"""BookSum: Rouge against hand-computed values, the overall formula, token-level book cuts,
options, the documents and cut counts on the tiny Llama, and the offline message."""

import math

import pytest

from lm_eval_longmem.data.booksum import load_books
from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError
from lm_eval_longmem.tasks.booksum.book_cut import plan_cut, tokenize_book
from lm_eval_longmem.tasks.booksum.metrics import rouge_by_length, scores_of
from lm_eval_longmem.tasks.booksum.prompt import summary_prompt
from lm_eval_longmem.tasks.booksum.protocol import BookSumOptions
from lm_eval_longmem.tasks.booksum.rouge import overall, rouge_f
from lm_eval_longmem.tasks.booksum.task import BookSumTask
from lm_eval_longmem.tasks.task_options import TaskOptionError, parse_task_options
from tests.helpers.booksum_fixture import FABLES, write_booksum_fixture


@pytest.mark.parametrize(
    "prediction, reference, expected",
    [
        # 6 tokens each; unigrams: the x2, cat, on, mat shared (5/6); bigrams: the-cat, on-the, the-mat (3/5);
        # LCS "the cat on the mat" (5/6)
        ("the cat sat on the mat", "the cat lay on the mat", (5 / 6, 3 / 5, 5 / 6)),
        # P 2/3, R 2/5 -> F 1/2; bigram fox-ran: P 1/2, R 1/4 -> F 1/3; LCS "fox ran" as unigrams
        ("a fox ran", "the fox ran away fast", (1 / 2, 1 / 3, 1 / 2)),
        # case and punctuation dropped
        ("The Cat, sat!", "the cat sat", (1.0, 1.0, 1.0)),
        # no stemming, as SCROLLS scores it: dogs/dog and running/runs differ
        ("dogs running", "dog runs", (0.0, 0.0, 0.0)),
        ("nothing shared", "entirely different words", (0.0, 0.0, 0.0)),
    ],
)
def test_rouge_f_measures_against_hand_computed_values(prediction, reference, expected):
    assert rouge_f(prediction, reference) == pytest.approx(expected)


@pytest.mark.parametrize(
    "row, printed",
    [  # Infini-attention's Table 4 (its baseline rows from Bertsch et al. 2024): R1, R2, RL -> overall
        ((36.4, 7.6, 15.3), 16.2),  # BART
        ((36.8, 8.3, 15.7), 16.9),  # BART + Unlimiformer
        ((38.6, 7.2, 15.6), 16.3),  # PRIMERA
        ((37.9, 8.2, 16.3), 17.2),  # PRIMERA + Unlimiformer
        ((37.9, 8.7, 17.6), 18.0),  # Infini-Transformers (Linear)
        ((40.0, 8.8, 17.9), 18.5),  # Infini-Transformers (Linear + Delta)
    ],
)
def test_overall_is_the_geometric_mean_the_papers_print(row, printed):
    assert round(overall(*row), 1) == printed


def test_overall_is_taken_over_corpus_means_and_books_count_once_per_reference():
    records = [
        {"pairs": [[0.4, 0.1, 0.2]], "budget": 8, "book_tokens": 5, "kept_tokens": 5, "cut_by_context": False},
        {
            "pairs": [[0.2, 0.0, 0.1], [0.6, 0.2, 0.3]],
            "budget": 8,
            "book_tokens": 50,
            "kept_tokens": 6,
            "cut_by_context": True,
        },
    ]
    scores = scores_of(records)
    assert scores["rouge1"] == pytest.approx(40.0) and scores["rouge2"] == pytest.approx(10.0)
    assert scores["rougeL"] == pytest.approx(20.0)
    assert scores["overall"] == pytest.approx((40 * 10 * 20) ** (1 / 3))  # not a mean of per-book means
    assert overall(0.5, 0.0, 0.5) == 0.0
    (point,) = rouge_by_length(records).field("points")
    assert (point["books"], point["references"], point["cut_by_context"], point["shorter_than_budget"]) == (2, 3, 1, 1)
    assert math.isnan(scores_of([])["overall"])


@pytest.fixture(scope="module")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_a_book_is_cut_to_its_first_tokens_at_token_level(tiny_tokenizer):
    text = "the sea and the ship , the king of night ; the gold stone"
    book = tokenize_book(text, tiny_tokenizer)
    ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert book.tokens == len(ids) == 14
    for count in (1, 5, 6, 13):
        prefix = book.first_tokens(count)
        assert text.startswith(prefix)
        assert tiny_tokenizer(prefix, add_special_tokens=False)["input_ids"] == ids[:count]
    assert book.first_tokens(5) == "the sea and the ship" and book.first_tokens(6) == "the sea and the ship ,"
    assert book.first_tokens(0) == "" and book.first_tokens(99) == text


def test_the_cut_is_the_budget_or_the_model_s_room_whichever_is_smaller(tiny_tokenizer):
    book = tokenize_book("the sea and the ship , the king of night ; the gold stone", tiny_tokenizer)
    roomy = lambda text: True  # noqa: E731
    cut, text = plan_cut(book, budget=5, room=100, fits=roomy)
    assert (cut.kept_tokens, cut.cut_by_context, text) == (5, False, "the sea and the ship")
    cut, text = plan_cut(book, budget=64, room=100, fits=roomy)  # the book is shorter than the budget
    assert (cut.kept_tokens, cut.wanted_tokens, cut.cut_by_context, text) == (14, 14, False, book.text)
    cut, _ = plan_cut(book, budget=64, room=9, fits=roomy)  # the model's context decides
    assert (cut.kept_tokens, cut.cut_by_context) == (9, True)
    cut, text = plan_cut(book, budget=64, room=9, fits=lambda t: len(t.split()) <= 7)  # steps down to fit
    assert (cut.kept_tokens, cut.cut_by_context, text) == (7, True, "the sea and the ship , the")


def test_options_are_bounded_and_named():
    options = parse_task_options(BookSumOptions, {"bs_lengths": "[64, 16]", "bs_books": 2}, "bs_")
    assert options.lengths == (16, 64) and options.books == 2 and options.split == "test" and not options.greedy
    assert parse_task_options(BookSumOptions, {}, "bs_").lengths == (16384, 32768, 65536, 131072, 262144, 500000)
    with pytest.raises(TaskOptionError, match="bs_lengths=\\[0\\] is out of range"):
        parse_task_options(BookSumOptions, {"bs_lengths": [0]}, "bs_")
    with pytest.raises(TaskOptionError, match="Did you mean validation"):
        parse_task_options(BookSumOptions, {"bs_split": "valdation"}, "bs_")
    with pytest.raises(TaskOptionError, match="bs_books=0"):
        parse_task_options(BookSumOptions, {"bs_books": 0}, "bs_")
    with pytest.raises(TaskOptionError, match="Unknown option.*bs_length.*bs_lengths"):
        parse_task_options(BookSumOptions, {"bs_length": 5}, "bs_")


@pytest.fixture(scope="module")
def booksum_data(tmp_path_factory):
    return write_booksum_fixture(tmp_path_factory.mktemp("booksum"))


def test_fixture_rows_become_books_with_all_their_references(booksum_data):
    books = load_books("test", str(booksum_data))
    assert [b.title for b in books] == list(FABLES) and [len(b.references) for b in books] == [1, 2, 1]
    assert all("test data" in b.title for b in books)


def build_task(tiny_model_dir, booksum_data, **metadata):
    config = {"pretrained": str(tiny_model_dir), "bs_data": str(booksum_data), "bs_lengths": [16, 64, 256]}
    return BookSumTask(config={"metadata": {**config, **metadata}})


def cuts(task):
    return {(d["book"], d["budget"]): task._cut(d)[0] for d in task.dataset["test"]}


def test_documents_round_robin_and_the_model_s_context_cuts_are_counted(tiny_model_dir, booksum_data, caplog):
    task = build_task(tiny_model_dir, booksum_data, bs_greedy=True)
    docs = list(task.dataset["test"])
    assert [(d["book"], d["budget"]) for d in docs[:4]] == [(0, 16), (0, 64), (0, 256), (1, 16)]
    assert task.config.generation_kwargs == {"until": [], "max_gen_toks": 1024, "do_sample": False, "temperature": 0.0}
    task.config.generation_kwargs["max_gen_toks"] = 4  # as --gen_kwargs sets it after the task is built
    prompt = task.doc_to_text(docs[0])
    assert prompt == summary_prompt(
        "A Famished Fox saw some clusters of ripe black grapes hanging from a trellised vine."
    )
    planned = cuts(task)
    tokens = {k: planned[(k, 16)].book_tokens for k in range(3)}
    assert tokens[0] < 100 < 128 < tokens[1] and tokens[2] > 128  # the fox fits the tiny model; the others do not
    assert [planned[(k, 16)].kept_tokens for k in range(3)] == [16, 16, 16]
    room = 128 - 4 - len(task._model.tokenizer(summary_prompt(""))["input_ids"])  # BOS included
    assert [planned[(k, 256)].kept_tokens for k in range(3)] == [tokens[0], room, room]
    assert [planned[(k, 256)].cut_by_context for k in range(3)] == [False, True, True]
    assert "cut 2 of 3 books shorter than the budget of 256 tokens" in caplog.text
    protocol = task.config.metadata["protocol"]
    assert protocol["kept_end"] == "first" and [b["tokens"] for b in protocol["books"]] == list(tokens.values())
    assert protocol["bounded_memory"] is False and protocol["decoding"] == "greedy"

    summary = "A fox could not reach the grapes and said they were sour."
    result = task.process_results(docs[5], [summary])  # the hare at 256 tokens
    assert result["cut_books@len256"]["cut_by_context"] is True
    assert result["overall@len256"]["pairs"] == [list(rouge_f(summary, r)) for r in task._references[1]]
    assert len(task._references[1]) == 2
    aggregated = {name: agg([result[name]]) for name, agg in task.aggregation().items() if name in result}
    assert aggregated["cut_books@len256"] == 1 and aggregated["rouge1@len256"] > 0


def test_a_bounded_method_reads_past_the_model_s_context(tiny_model_dir, booksum_data):
    task = build_task(
        tiny_model_dir,
        booksum_data,
        method="streamingllm",
        max_context_length=24,
        chunk_size=8,
        sink_length=4,
    )
    assert task.config.metadata["protocol"]["bounded_memory"] is True
    assert task.config.generation_kwargs["do_sample"] is True  # the paper's sampling by default
    assert task.config.generation_kwargs["temperature"] == 0.5 and task.config.generation_kwargs["top_p"] == 0.95
    planned = cuts(task)  # with the paper's 1,024 generated tokens, far past the 128 the model was trained on
    assert not any(cut.cut_by_context for cut in planned.values())
    assert all(cut.kept_tokens == min(cut.budget, cut.book_tokens) for cut in planned.values())
    assert max(cut.kept_tokens for cut in planned.values()) > 128


def test_a_model_too_short_for_the_summary_is_told_how_to_fix_it(tiny_model_dir, booksum_data):
    task = build_task(tiny_model_dir, booksum_data)  # 128 tokens cannot hold 1,024 generated ones
    with pytest.raises(TaskOptionError, match="max_gen_toks"):
        task.doc_to_text(task.dataset["test"][0])


def test_offline_without_the_dataset_fails_fast_and_names_fetch_data(tmp_path, monkeypatch):
    import time

    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    start = time.perf_counter()
    with pytest.raises(DatasetUnavailableError) as missing:
        load_books("validation")
    assert time.perf_counter() - start < 20  # no Hub retries
    message = str(missing.value)
    assert "abertsch/booksum-fullbooks" in message and "cannot be reached" in message
    assert "lm-eval-longmem fetch-data booksum" in message and "bs_data=PATH" in message


def test_the_curve_also_counts_each_book_once():
    """A book with two references weighs twice in the row-level means; `per_book` averages its
    references first, and `by_book` lists each book's own scores."""
    records = [
        {"title": "a", "pairs": [[0.4, 0.1, 0.2]], "budget": 8, "book_tokens": 5, "kept_tokens": 5},
        {"title": "b", "pairs": [[0.2, 0.0, 0.1], [0.6, 0.2, 0.3]], "budget": 8, "book_tokens": 9, "kept_tokens": 8},
    ]
    for record in records:
        record["cut_by_context"] = False
    (point,) = rouge_by_length(records).field("points")
    assert point["rouge1"] == pytest.approx(40.0)  # rows: (40 + 20 + 60) / 3
    assert point["per_book"]["rouge1"] == pytest.approx(40.0)  # books: (40 + 40) / 2
    assert point["per_book"]["rouge2"] == pytest.approx(10.0) and point["rouge2"] == pytest.approx(10.0)
    records[0]["pairs"] = [[1.0, 0.5, 0.5]]
    (point,) = rouge_by_length(records).field("points")
    assert point["rouge1"] == pytest.approx(60.0) and point["per_book"]["rouge1"] == pytest.approx(70.0)
    assert [(b["title"], b["references"]) for b in point["by_book"]] == [("a", 1), ("b", 2)]
    assert point["by_book"][1]["rouge1"] == pytest.approx(40.0)


def test_a_file_with_other_columns_is_refused_naming_the_columns_it_has(tmp_path):
    import datasets

    from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError

    datasets.Dataset.from_dict({"book": ["text"], "summary_text": ["s"]}).to_parquet(str(tmp_path / "test.parquet"))
    with pytest.raises(
        DatasetUnavailableError, match=r"lacks the column\(s\) \['summary'\]; it has \['book', 'summary_text'\]"
    ):
        load_books("test", str(tmp_path))
