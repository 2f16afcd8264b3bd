"""Looking inside the shared streaming scorer and generator from a test: the sequences they start."""


def recorded(owner, observe=None) -> list:
    """Make `owner` (a `StreamingScorer` or `StreamingGenerator`) keep each sequence it starts, in a list
    returned here; `observe(sequence)` runs on each before it is fed."""
    made = []
    start = owner.start_sequence

    def start_and_record():
        made.append(start())
        if observe is not None:
            observe(made[-1])
        return made[-1]

    owner.start_sequence = start_and_record
    return made


class CountedCalls:
    """`fn`, counting its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def count_steady_steps(runner) -> None:
    """An observer: count the chunks a stated-CLM runner gives its static-shape step."""
    runner.steady_step = CountedCalls(runner.steady_step)
