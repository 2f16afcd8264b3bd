"""The budget in one place (every trained row reads the same tokens in the same order), the
step count from a token budget, Kendall's tau-b by hand, and Table 1's cells and intervals."""

from __future__ import annotations

import math

import pytest

from lm_eval_longmem.study.budget import steps_for, training_overrides
from lm_eval_longmem.study.kendall import kendall_tau
from lm_eval_longmem.study.schema import StudyConfigError, build_study
from lm_eval_longmem.study.scores import RowScores, Score, wilson_interval
from lm_eval_longmem.study.tables import _score as _score_text
from lm_eval_longmem.study.tables import correlations, markdown, table1, table2


def small_study(model_dir, corpus_file, tmp_path, **budget):
    raw = {
        "base": str(model_dir),
        "output_path": str(tmp_path / "out"),
        "budget": {"tokens": 256, "seq_len": 32, "micro_batch_size": 2, "data": str(corpus_file), **budget},
        "methods": [{"label": "PI", "recipe": "tiny-pi"}, {"label": "YaRN", "recipe": "tiny-yarn"}, "vanilla"],
        "suite": {"ppl": {"lengths": [32]}},
    }
    return build_study(raw, "test")


def test_every_trained_row_reads_the_same_chunks_in_the_same_order(tiny_model_dir, corpus_file, tmp_path):
    from transformers import AutoTokenizer

    from lm_eval_longmem.study.budget import override_words
    from lm_eval_longmem_training.data.batch_order import BatchOrder
    from lm_eval_longmem_training.loop.training_loop import load_chunks
    from lm_eval_longmem_training.recipes.loading import load_recipe

    study = small_study(tiny_model_dir, corpus_file, tmp_path, seed=7)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    batches = {}
    for row in study.rows[:2]:
        overrides = training_overrides(study, row)
        assert overrides["max_steps"] == 4  # 256 tokens / (2 sequences x 32 tokens)
        recipe = load_recipe(row.recipe, override_words(overrides))
        assert (recipe.model, recipe.data, recipe.seq_len, recipe.seed) == (
            str(tiny_model_dir),
            str(corpus_file),
            32,
            7,
        )
        order = BatchOrder(load_chunks(recipe, tokenizer, 1), 2, 1, 1, 0, recipe.seed)
        batches[row.label] = [order.micro_batch(step, 0) for step in range(recipe.max_steps)]
        assert recipe.method == {"PI": "pi", "YaRN": "yarn"}[row.label]  # each keeps its own method
    assert all((a == b).all() for a, b in zip(batches["PI"], batches["YaRN"]))
    assert not (batches["PI"][0] == batches["PI"][1]).all()


def test_steps_from_tokens_round_up_and_a_row_at_its_own_length_keeps_the_tokens(tiny_model_dir, corpus_file, tmp_path):
    study = small_study(tiny_model_dir, corpus_file, tmp_path)
    assert steps_for(study.budget, 32, "PI", "test") == 4
    assert steps_for(study.budget, 48, "PI", "test") == 3  # ceil(256 / 96)
    with pytest.raises(StudyConfigError, match="256 tokens is less than one step of row L"):
        steps_for(study.budget, 256, "L", "test")
    by_steps = small_study(tiny_model_dir, corpus_file, tmp_path, tokens=None, steps=5)
    assert steps_for(by_steps.budget, 32, "PI", "test") == 5 and steps_for(by_steps.budget, 16, "L", "test") == 10


def test_kendall_tau_b_by_hand():
    # no ties: 5 concordant pairs, 1 discordant of 6
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4])["tau"] == pytest.approx(4 / 6)
    # one tie in each ranking: C = 4, D = 0; tau-b = 4 / sqrt((6 - 1) * (6 - 1))
    assert kendall_tau([1, 1, 2, 3], [1, 2, 3, 3])["tau"] == pytest.approx(0.8)
    # lower perplexity with higher scores: negative
    result = kendall_tau([10.0, 8.0, 6.0, 5.0, 4.0], [1.0, 2.0, 3.0, 5.0, 4.0])
    assert result["tau"] == pytest.approx(-0.8) and 0 < result["p_value"] < 0.1 and result["n"] == 5
    assert kendall_tau([1.0, 2.0], [1.0, 2.0]) == {"tau": None, "p_value": None, "n": 2, "why": "too few methods (2)"}
    tied = kendall_tau([40.1, 41.6, 200.9], [0.0, 0.0, 0.0])  # every method scores 0: no ranking to compare
    assert tied["tau"] is None and tied["why"] == "undefined: every method has the same score"
    assert kendall_tau([1.0, None, 3.0, 4.0], [2.0, 1.0, None, 5.0])["n"] == 2


def row(label, ppl, needle, exact=True, **extra):
    return RowScores(
        label=label,
        kind="training-free",
        method="vanilla",
        train_length=4096,
        eval_length=32768,
        exact=exact,
        ppl=Score(ppl),
        ppl_by_length={4096: ppl - 1, 32768: ppl},
        needle=Score(*needle),
        **extra,
    )


def test_table1_cells_intervals_and_lengths():
    rows = [row("A", 6.5, (80.0, 70.0, 90.0)), row("B", 14.52, (18.8, None, None), exact=False), row("C", 9.0, ())]
    table = table1(rows, ["ppl", "needle"])
    assert table.header == ["Method", "Kind", "Train len", "Eval len", "Exact", "PPL", "Needle"]
    assert table.rows[0] == ["A", "training-free", "4k", "32k", "yes", "6.50", "80.0 [70.0, 90.0]"]
    assert table.rows[1][4:] == ["no", "14.52", "18.8"] and table.rows[2][6] == "-"
    (ppl_table,) = table2(rows)
    assert ppl_table.header == ["Method", "Train len", "Exact", "4k", "32k"]
    assert ppl_table.title == "Table 2: perplexity by evaluation length"
    text = markdown(table)
    assert text.splitlines()[2] == "| Method | Kind | Train len | Eval len | Exact | PPL | Needle |"
    found = correlations(rows, ["ppl", "needle"])
    assert found["needle"]["n"] == 2 and found["needle"]["tau"] is None and math.isclose(rows[0].ppl.value, 6.5)


def test_a_second_corpus_is_its_own_perplexity_run_and_its_own_table_2(tmp_path, corpus_file):
    from lm_eval_longmem.study.suite import eval_parts

    suite = {"ppl": {"lengths": [32, 64], "stride": 16, "corpus": ["pg19", str(corpus_file)]}, "needle": {}}
    study = build_study({"methods": ["vanilla"], "suite": suite, "output_path": str(tmp_path)}, "test")
    core, second = eval_parts(study)
    assert core.metadata["ppl_corpus"] == "pg19" and core.tasks == ("longmem_perplexity", "longmem_passkey")
    assert second.name == f"ppl:{corpus_file}" and second.tasks == ("longmem_perplexity",)
    assert second.metadata == {"ppl_lengths": [32, 64], "ppl_stride": 16, "ppl_corpus": str(corpus_file)}
    assert second.second_corpus == str(corpus_file) and second.runs_our_tasks and core.second_corpus is None
    for bad in ([], ["pg19", "pg19"], ["pg19", 3]):
        with pytest.raises(StudyConfigError, match="suite.ppl.corpus must be a corpus name or path"):
            eval_parts(build_study({"methods": ["vanilla"], "suite": {"ppl": {"corpus": bad}}}, "test"))

    rows = [row("A", 6.5, ()), row("B", 9.0, ())]
    rows[0].ppl_corpus = rows[1].ppl_corpus = "pg19"
    rows[0].ppl_other_corpora = {"proof-pile": {4096: 3.25}}
    first, other = table2(rows)
    assert first.title == "Table 2: perplexity by evaluation length, pg19" and first.rows[0][3:] == ["5.50", "6.50"]
    assert other.name == "table2_corpus2" and other.title.endswith(", proof-pile")
    assert other.header[3:] == ["4k"] and [r[3] for r in other.rows] == ["3.25", "-"]


def test_ruler_and_longbench_are_read_from_lm_evals_results_layout():
    """RULER: one metric per max_seq_lengths entry in each of its tasks, averaged over the tasks
    per length (in percent); LongBench: the group's score."""
    from lm_eval_longmem.study.scores import _read_into
    from lm_eval_longmem.study.tables import ruler_table

    scores = RowScores("A", "training-free", "vanilla", 4096, 8192, True)
    data = {
        "results": {
            "ruler": {"4096,none": 0.9},
            "niah_single_1": {"4096,none": 1.0, "8192,none": 0.5, "4096_stderr,none": "N/A"},
            "ruler_vt": {"4096,none": 0.6, "8192,none": 0.1},
            "longbench": {"score,none": 31.5, "score_stderr,none": 0.5},
        },
        "group_subtasks": {"ruler": ["niah_single_1", "ruler_vt"], "longbench": []},
    }
    _read_into(scores, data)
    assert scores.ruler_by_length == pytest.approx({4096: 80.0, 8192: 30.0})
    assert scores.ruler.value == pytest.approx(55.0)
    assert scores.longbench.value == 31.5 and scores.longbench.low == pytest.approx(31.5 - 1.96 * 0.5)
    assert ruler_table([scores]).rows == [["A", "4k", "80.00", "30.00", "55.00"]]


def test_accuracy_intervals_are_wilsons_over_the_recorded_samples():
    from lm_eval_longmem.study.scores import _accuracy, wilson_interval

    low, high = wilson_interval(1.0, 6)  # 6 of 6 right: z^2 / (n + z^2) = 3.8416 / 9.8416 below 1
    assert low == pytest.approx(6 / (6 + 1.96**2)) and high == pytest.approx(1.0)
    assert wilson_interval(0.5, 6) == pytest.approx((0.1876128, 0.8123872), abs=1e-6)
    score = _accuracy({"acc,none": 0.5, "acc_stderr,none": 0.2}, "acc", 6)
    assert (score.value, score.samples) == (50.0, 6) and score.low == pytest.approx(18.76128, abs=1e-4)
    unknown = _accuracy({"acc,none": 0.5, "acc_stderr,none": 0.2}, "acc", None)  # no count: lm-eval's stderr
    assert unknown.low == pytest.approx(100 * (0.5 - 1.96 * 0.2))


def test_figure2_draws_scores_at_the_top_of_their_interval(tmp_path):
    """6 of 6 right: Wilson's upper end rounds just below 100%, which matplotlib would refuse as a
    negative error bar."""
    from lm_eval_longmem.study.figure import draw_figure2
    from lm_eval_longmem.study.scores import wilson_interval

    low, high = wilson_interval(1.0, 6)
    rows = [row("A", 6.5, (100.0, 100 * low, 100 * high)), row("B", 9.0, (50.0, 20.0, 80.0)), row("C", 30.0, (0.0,))]
    output = draw_figure2(rows, correlations(rows, ["ppl", "needle"]), tmp_path / "figure2.png")
    assert output.stat().st_size > 10_000


def test_needle_by_length_and_depth_and_mshots_by_shots_pool_the_tasks_own_cells():
    from lm_eval_longmem.study.scores import _read_into
    from lm_eval_longmem.study.tables import breakdown_tables

    grid = {  # accuracy[depth][length] over num_samples[depth][length] prompts, as longmem_passkey writes it
        "lengths": [512, 1024],
        "depths": [0, 100],
        "accuracy": [[1.0, 0.5], [0.0, 0.25]],
        "num_samples": [[2, 2], [2, 4]],
    }
    results = {
        "results": {
            "longmem_passkey": {"acc,none": 0.4, "grid,none": grid},
            "longmem_trec_manyshot": {"acc,none": 0.25, "acc@0001shots,none": 0.0, "acc@0008shots,none": 0.5},
        },
        "configs": {
            "longmem_trec_manyshot": {"metadata": {"protocol": {"shots": [1, 8], "questions_per_shot_count": [4, 4]}}}
        },
    }
    scores = row("A", 6.5, ())
    _read_into(scores, results)

    # 512: 2 of 2 at depth 0 + 0 of 2 at depth 100; 1k: 1 of 2 + 1 of 4
    def cells(found):
        return {key: (score.value, score.samples) for key, score in found.items()}

    assert cells(scores.needle_by_length) == {512: (50.0, 4), 1024: (pytest.approx(100 / 3), 6)}
    assert cells(scores.needle_by_depth) == {0: (75.0, 4), 100: (pytest.approx(100 / 6), 6)}
    assert scores.needle_by_length[512].low == pytest.approx(100 * wilson_interval(0.5, 4)[0])
    assert cells(scores.mshots_by_shots) == {1: (0.0, 4), 8: (50.0, 4)}
    by_length, by_depth, by_shots = breakdown_tables([scores], ["needle", "mshots"])
    assert by_length.header == ["Method", "Train len", "512", "1k"] and by_depth.header[2:] == ["0%", "100%"]
    assert by_shots.rows[0][2:] == [_score_text(scores.mshots_by_shots[1]), _score_text(scores.mshots_by_shots[8])]
