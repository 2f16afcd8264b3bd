"""Outside a git checkout, lm-eval's commit probe let git print "fatal: not a git repository" on
every run; quiet.install_quiet_git_probe runs the same probe with git's stderr discarded."""

import subprocess
import types

from lm_eval_longmem.harness import quiet


def fake_loggers_utils():
    import lm_eval.loggers.utils as real

    original = getattr(
        real.get_git_commit_hash, "__wrapped__", real.get_git_commit_hash
    )  # another test may have quieted it
    return types.SimpleNamespace(get_git_commit_hash=original, get_commit_from_path=real.get_commit_from_path)


def test_outside_a_checkout_nothing_is_printed_and_no_hash_recorded(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    module = fake_loggers_utils()
    module.get_git_commit_hash()
    assert "not a git repository" in capfd.readouterr().err  # lm-eval's own probe: git's message
    quiet.install_quiet_git_probe(module)
    assert module.get_git_commit_hash() is None
    assert capfd.readouterr().err == ""
    quiet.install_quiet_git_probe(module)  # idempotent
    assert module.get_git_commit_hash.__lm_eval_longmem__


def test_inside_a_checkout_the_same_hash_as_lm_eval_records(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    monkeypatch.chdir(tmp_path)
    module = fake_loggers_utils()
    expected = module.get_git_commit_hash()
    quiet.install_quiet_git_probe(module)
    assert module.get_git_commit_hash() == expected and len(expected) >= 7


def test_an_lm_eval_run_outside_a_checkout_prints_no_git_message(tiny_model_dir, corpus_file, tmp_path):
    """lm-eval probes git while it runs (never at import), in the run's working directory."""
    from tests.helpers.cli_runs import BIN, run, small_protocol

    args = [BIN / "lm_eval", "--model", "longmem", "--model_args", f"pretrained={tiny_model_dir}"]
    args += ["--tasks", "forgetting_curve", *small_protocol(corpus_file), "--output_path", "out"]
    proc = run(args, cwd=tmp_path)
    assert "not a git repository" not in proc.stderr
    assert list((tmp_path / "out").rglob("results_*.json"))


def test_the_python_api_drops_the_same_known_harmless_messages():
    import logging

    import lm_eval_longmem

    lm_eval_longmem.register()
    assert any(type(f).__name__ == "_DropKnownHarmless" for f in logging.getLogger("lm_eval.evaluator_utils").filters)
    import lm_eval.evaluator

    assert lm_eval.evaluator.get_git_commit_hash.__lm_eval_longmem__
