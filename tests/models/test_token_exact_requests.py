"""Token-exact requests and scores survive lm-eval's caches (pickle) and its JSON output."""

import json
import pickle

from lm_eval_longmem.models.runtime.requests import ScoredContinuation, TokenText, token_ids_of


def test_token_text_is_a_string_with_ids():
    text = TokenText("the sea", [5, 9])
    assert text == "the sea" and token_ids_of(text) == (5, 9) and token_ids_of("the sea") is None
    again = pickle.loads(pickle.dumps(text))  # --cache_requests pickles instances
    assert token_ids_of(again) == (5, 9) and json.dumps(again) == '"the sea"'


def test_scored_continuation_is_lm_evals_pair_plus_counts():
    score = ScoredContinuation(-2.5, False, 3, 4)
    loglikelihood, is_greedy = score  # what lm-eval's own tasks unpack
    assert (loglikelihood, is_greedy, score.accuracy) == (-2.5, False, 0.75)
    again = pickle.loads(pickle.dumps(score))  # --use_cache stores results with pickle
    assert (again.num_correct, again.num_tokens, tuple(again)) == (3, 4, (-2.5, False))
    assert json.loads(json.dumps(score)) == [-2.5, False]
