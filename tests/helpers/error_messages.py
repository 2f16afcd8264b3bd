"""What a user error looks like from outside a command: one `error:` message, a non-zero exit, no
traceback, and (for start-up checks) no model loaded first."""


def assert_one_message(proc, *expected):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "error:" in proc.stderr
    for text in expected:
        assert text in proc.stderr, proc.stderr[-3000:]


def started_nothing_heavy(proc):
    """lm-eval logs this when it starts loading the model: a start-up check must come first."""
    return "Initializing longmem model" not in proc.stderr
