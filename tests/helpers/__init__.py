"""What several test modules share and that is not a fixture: import it as `from tests.helpers.X import Y`."""
