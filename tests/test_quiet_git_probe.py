"""Outside a git checkout, lm-eval's commit probe let git print "fatal: not a git repository" on
every run; quiet.quiet_git_probe runs the same probe with git's stderr discarded."""

import subprocess
import types

from lm_eval_longmem import quiet


def fake_loggers_utils():
    import lm_eval.loggers.utils as real

    return types.SimpleNamespace(get_git_commit_hash=real.get_git_commit_hash, get_commit_from_path=real.get_commit_from_path)


def test_outside_a_checkout_nothing_is_printed_and_no_hash_recorded(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    module = fake_loggers_utils()
    module.get_git_commit_hash()
    assert "not a git repository" in capfd.readouterr().err  # lm-eval's own probe: git's message
    quiet.quiet_git_probe(module)
    assert module.get_git_commit_hash() is None
    assert capfd.readouterr().err == ""
    quiet.quiet_git_probe(module)  # idempotent
    assert module.get_git_commit_hash.__lm_eval_longmem__


def test_inside_a_checkout_the_same_hash_as_lm_eval_records(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    monkeypatch.chdir(tmp_path)
    module = fake_loggers_utils()
    expected = module.get_git_commit_hash()
    quiet.quiet_git_probe(module)
    assert module.get_git_commit_hash() == expected and len(expected) >= 7
