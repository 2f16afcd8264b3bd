"""benchmarks/booksum_fixture.py, the offline BookSum fixture users run: it writes the fixture and
prints an `lm_eval` command (with the chat template the default instruct model needs) that reads it."""

from lm_eval_longmem.data.booksum import load_books
from tests.helpers.benchmark_scripts import load_benchmark


def test_it_writes_the_fixture_and_prints_a_command_that_reads_it(tmp_path, capsys):
    script = load_benchmark("booksum_fixture")
    assert script.main(["--out", str(tmp_path / "fables")]) == 0
    out = capsys.readouterr().out
    assert "TEST DATA" in out and f"bs_data={tmp_path / 'fables'}" in out and "--apply_chat_template" in out
    assert [len(book.references) for book in load_books("test", str(tmp_path / "fables"))] == [1, 2, 1]
