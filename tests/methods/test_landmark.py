"""method=landmark on the tiny Llama given a `<landmark>` token: the window formula, slot positions
and block choice against the official code's hand cases, one layer's attention against an
implementation written out here, generation against teacher forcing, and the refusals."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from lm_eval_longmem.kernels.grouped_softmax import reference_grouped_softmax
from lm_eval_longmem.models.landmark.checkpoint import NoLandmarkTokenError
from lm_eval_longmem.models.landmark.layout import (
    WindowDoesNotFitError,
    insert_landmarks,
    predicting_position,
    window_length,
)
from lm_eval_longmem.models.landmark.retrieval import BlockChooser, top_blocks
from lm_eval_longmem.models.landmark.sequence import GATHER_BUDGET_BYTES, LandmarkSequence, queries_per_pass
from lm_eval_longmem.models.landmark.signed_rope import rotate_signed, signed_sin
from lm_eval_longmem.models.landmark.slots import chosen_block_positions, landmark_score_positions, slot_origin
from lm_eval_longmem.models.methods.landmark import Landmark, LandmarkArgs
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.llama_decoder import Decoder, rotate
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from tests.helpers.streaming import recorded

LANDMARK = 90  # an id outside the word vocabulary, given to the tiny checkpoint below


def test_window_formula_as_the_official_code():
    assert window_length(512, 64, 5) == 128  # the study: T = 512, B = 64, k = 5
    assert window_length(512, 51, 5) == 512 - 2 - 6 * 51  # the released weights' blocks of 51
    assert window_length(32, 4, 2) == 20


def test_a_window_that_cannot_fit_is_refused_with_the_largest_top_k():
    with pytest.raises(WindowDoesNotFitError, match="top_k=7 .* use top_k <= 6"):
        window_length(512, 64, 7)


def test_slot_positions_for_a_small_cache():
    """k = 2, B = 4, 5 cached blocks (20 tokens): the slot area starts at 20 - 3*4 = 8."""
    assert landmark_score_positions(5, 2, 4).tolist() == [11, 11, 11, 15, 19]
    chosen = torch.tensor([[0, 4], [3, 4], [1, 2]])
    positions = chosen_block_positions(chosen, 5, 2, 4)
    assert positions[0].tolist() == [[8, 9, 10, 11], [16, 17, 18, 19]]  # an old block, then the newest
    assert positions[1].tolist() == [[12, 13, 14, 15], [16, 17, 18, 19]]  # the last two keep their places
    assert positions[2].tolist() == [[8, 9, 10, 11], [12, 13, 14, 15]]
    # fewer blocks than k: every block keeps its own position
    assert landmark_score_positions(2, 5, 4).tolist() == [3, 7] and slot_origin(2, 5, 4) == -4


def test_each_head_and_token_choose_their_own_blocks():
    scores = torch.tensor([[[5.0, 0, 3, 1], [0, 4, 0, 6]], [[1.0, 2, 0, 9], [7, 0, 8, 0]]])  # [H=2, c=2, n=4]
    chosen = BlockChooser("per_token_and_head").choose(scores, 2)
    assert chosen.tolist() == [[[0, 2], [1, 3]], [[1, 3], [0, 2]]]


def test_ties_for_the_last_places_go_to_the_most_recent_blocks():
    """Scores within the tie tolerance of the k-th count as equal; the surely higher ones always stay."""
    scores = torch.tensor([[5.0, 1, 1 + 1e-7, 1, 0], [1.0, 1, 1, 1, 1], [0.0, 3, 2, 9, 1]])
    assert top_blocks(scores, 2).tolist() == [[0, 3], [3, 4], [1, 3]]
    assert top_blocks(scores, 3).tolist() == [[0, 2, 3], [2, 3, 4], [1, 2, 3]]


@pytest.mark.parametrize("rotary", [8, 4])  # full and partial rotary (Phi-3)
def test_the_signed_rotation_is_rotate_bit_for_bit(rotary):
    x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(3))
    angles = torch.rand(5, rotary // 2, generator=torch.Generator().manual_seed(4)) * 50
    cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
    assert torch.equal(rotate_signed(x, cos, signed_sin(sin)), rotate(x, cos, sin))


def test_max_over_tokens_is_one_running_choice_per_head():
    chooser = BlockChooser("max_over_tokens")
    first = chooser.choose(torch.tensor([[[9.0, 0, 0, 0]], [[0.0, 0, 0, 9]]]), 1)
    later = chooser.choose(torch.tensor([[[0.0, 5, 0, 0], [0, 0, 0, 0]], [[0.0, 0, 0, 0], [0, 0, 0, 0]]]), 1)
    assert first.tolist() == [[[0]], [[3]]] and later.tolist() == [[[0], [0]], [[3], [3]]]


def test_landmarks_go_after_every_block_and_predict_the_next_one():
    assert insert_landmarks([1, 2, 3, 4, 5, 6, 7], 4, 0) == [1, 2, 3, 0, 4, 5, 6, 0, 7]
    assert [predicting_position(t, 4, True) for t in range(7)] == [0, 1, 3, 4, 5, 7, 8]
    assert [predicting_position(t, 4, False) for t in range(7)] == [0, 1, 2, 4, 5, 6, 8]
    # a stream continued after 5 visible tokens (decoding) counts them: its first block closes after one
    assert insert_landmarks([6, 7, 8, 9], 4, 0, before=5) == [6, 0, 7, 8, 9, 0]


@pytest.fixture(scope="module")
def landmark_model(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    from lm_eval_longmem.models.landmark.checkpoint import record_layout

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    model.resize_token_embeddings(LANDMARK + 1, mean_resizing=False)
    record_layout(model.config, LANDMARK, 4, 32, True)
    return model


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("earlier", [0, 3])
def test_one_layer_attends_as_written_out(landmark_model, earlier, in_place, monkeypatch):
    """Two windows (40 tokens) into the store and `earlier` tokens of the third, then a 5-token piece:
    against a loop over heads and queries (the earlier tokens' keys were rotated by their own piece,
    the landmark keys at the last fold). Layer 1: at layer 0 all landmark keys are one embedding and
    older blocks tie (see retrieval.top_blocks). `in_place`: without gradients, on the CPU's C
    function, which reads the chosen blocks where they lie; with them, the gathers of PyTorch."""
    from lm_eval_longmem.models.landmark import sequence

    calls = []
    c_function = sequence.cpu_retrieval_attention
    monkeypatch.setattr(sequence, "cpu_retrieval_attention", lambda *a: calls.append(a) or c_function(*a))
    decoder = Decoder(landmark_model)
    torch.manual_seed(0)
    seq = LandmarkSequence(decoder, block_size=4, top_k=3, window=20)
    seq.feed([int(t) for t in torch.randint(4, 80, (40 + earlier,))])
    x = torch.randn(5, decoder.hidden_size)
    q, k, v = decoder.project(1, x)
    earlier_k, earlier_v = seq.local[1].pre_rope_keys, seq.local[1].values
    calls.clear()
    with torch.set_grad_enabled(not in_place):
        got = seq._attend(1, q, k, v)
    assert len(calls) == int(in_place) and got.requires_grad != in_place
    assert len({tuple(c) for c in seq.last_chosen[1].flatten(0, 1).tolist()}) > 1  # heads and tokens differ

    store, B, K, n = seq.stores[1], 4, 3, 10
    cos, sin = decoder.rope(200, x)[1]
    # the store keeps each key rotated by its offset r in its block: undo it to start from pre-RoPE keys
    stored_keys = rotate(store.keys, cos[:B], -sin[:B])
    full = n * B
    origin = full - (K + 1) * B  # official absolute positions, no shift: RoPE sees differences only
    expected = torch.zeros_like(got)
    for h in range(4):
        kv = h // 2
        for i in range(5):
            qi = rotate(q[h, i], cos[full + earlier + i], sin[full + earlier + i])
            lm_pos = [origin + (0 if b < n - K else b - (n - K) + 1) * B + B - 1 for b in range(n)]
            lm_scores = torch.stack([qi @ rotate(stored_keys[kv, b, -1], cos[p], sin[p]) for b, p in enumerate(lm_pos)])
            chosen = sorted(lm_scores.topk(K).indices.tolist())
            keys, values = [], []
            for s, b in enumerate(chosen):
                start = origin + s * B + (B if b >= n - K else 0)
                keys += [rotate(stored_keys[kv, b, r], cos[start + r], sin[start + r]) for r in range(B)]
                values += [store.values[kv, b, r] for r in range(B)]
            window_k, window_v = torch.cat([earlier_k, k], dim=1), torch.cat([earlier_v, v], dim=1)
            keys += [rotate(window_k[kv, j], cos[full + j], sin[full + j]) for j in range(earlier + i + 1)]
            values += [window_v[kv, j] for j in range(earlier + i + 1)]
            scores = torch.stack([qi @ key for key in keys]) * decoder.scaling
            weights = reference_grouped_softmax(scores[None].double(), B)[0].float()
            expected[h, i] = weights @ torch.stack(values)
    assert torch.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("selection", ["per_token_and_head", "max_over_tokens"])
def test_pieces_of_any_size_give_the_same_outputs(landmark_model, selection, in_place, monkeypatch):
    """A window fed whole, token by token or in pieces of 7: each piece rotates only its own keys into
    the window and reads the landmark keys rotated at the last fold, so every split must agree; on
    the CPU's C function (`in_place`, pieces start inside a window) and on PyTorch's gathers."""
    from lm_eval_longmem.kernels.c_library import SWITCH_ENV

    if not in_place:
        monkeypatch.setenv(SWITCH_ENV, "0")
    decoder = Decoder(landmark_model)
    ids = [int(t) for t in torch.randint(4, 80, (70,), generator=torch.Generator().manual_seed(2))]
    outputs = []
    for pass_size in (None, 1, 7):
        seq = LandmarkSequence(decoder, block_size=4, top_k=3, window=20, selection=selection, pass_size=pass_size)
        with torch.no_grad():
            outputs.append(torch.cat([seq.feed(ids[start : start + 20]) for start in range(0, 70, 20)]))
    assert seq.num_blocks == 15
    for other in outputs[1:]:  # the grouped products' shapes differ with the piece: last-bit rounding
        assert torch.allclose(other, outputs[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("landmark_in_loss", [True, False])
def test_generation_equals_teacher_forcing_on_the_augmented_sequence(landmark_model, landmark_in_loss):
    method = Landmark(LandmarkArgs(top_k=2, landmark_in_loss=landmark_in_loss))
    method.prepare_model(landmark_model)
    prompt = [int(t) for t in torch.randint(4, 80, (33,), generator=torch.Generator().manual_seed(1))]
    generator = method.make_generator(landmark_model, None)
    streams = recorded(generator)
    new = generator.generate(GenerationRequest(tuple(prompt), 14))
    assert len(new) == 14 and LANDMARK not in new
    row = method.make_scorer(landmark_model).start_sequence()  # layer by layer, every window at once
    with torch.no_grad():
        ((start, hidden),) = row.feed_pieces(prompt + new, read_from=len(prompt) - 1, last=True)
        logits = landmark_model.get_output_embeddings()(hidden[:-1])  # those that predicted the new tokens
    logits[:, LANDMARK] = float("-inf")
    assert start == len(prompt) - 1 and logits.argmax(-1).tolist() == new
    assert streams[0].sequence.num_blocks > 0  # the continuation read retrieved blocks


@pytest.mark.parametrize("landmark_in_loss", [True, False])
def test_both_scorers_score_each_token_from_the_output_that_predicts_it(landmark_model, landmark_in_loss):
    """Written out: the augmented row window by window through a `LandmarkSequence`, each visible token
    predicted by the landmark after it when it closes a block and landmarks were in the loss, else by
    itself. The window-by-window scorer gives that (to 1e-5: rounding); the layer-major one within
    test_landmark_layer_major.py's 2e-5 (float32 rounding). 70 tokens: several windows of 20 augmented
    tokens, and a last block the row does not fill."""
    method = Landmark(LandmarkArgs(top_k=2, landmark_in_loss=landmark_in_loss))
    method.prepare_model(landmark_model)
    row = [int(t) for t in torch.randint(4, 80, (71,), generator=torch.Generator().manual_seed(2))]
    augmented = insert_landmarks(row[:-1], 4, LANDMARK)
    sequence = LandmarkSequence(Decoder(landmark_model), block_size=4, top_k=2, window=20)
    with torch.no_grad():
        hidden = torch.cat([sequence.feed(augmented[i : i + 20]) for i in range(0, len(augmented), 20)])
    closes = [i + 1 < len(augmented) and augmented[i + 1] == LANDMARK for i in range(len(augmented))]
    own = [i + (closes[i] and landmark_in_loss) for i, token in enumerate(augmented) if token != LANDMARK]
    with torch.no_grad():
        logits = landmark_model.get_output_embeddings()(hidden[own[9:]]).float()
    expected = -logits.log_softmax(-1)[torch.arange(61), torch.tensor(row[10:])]
    span, ids = ScoredSpan(9, tuple(row[10:])), torch.tensor([row[:-1]])
    (windows,) = method.make_window_scorer(landmark_model).score(ids, [span])
    (layers,) = method.make_scorer(landmark_model).score(ids, [span])
    # the same outputs; the head run per window and log_softmax for logsumexp: rounding only
    torch.testing.assert_close(torch.from_numpy(windows.token_nll), expected, atol=1e-5, rtol=0)
    assert windows.num_tokens == layers.num_tokens == 61 and windows.num_correct == layers.num_correct
    assert abs(windows.token_nll - layers.token_nll).max() <= 2e-5


def test_generation_never_returns_a_landmark(landmark_model):
    method = Landmark(LandmarkArgs(top_k=2))
    method.prepare_model(landmark_model)
    head = landmark_model.get_output_embeddings()
    saved = head.weight[LANDMARK].clone()
    with torch.no_grad():
        head.weight[LANDMARK] = 100 * head.weight.abs().max()  # the model would always say <landmark>
    try:
        new = method.make_generator(landmark_model, None).generate(GenerationRequest((5, 6, 7), 9))
    finally:
        with torch.no_grad():
            head.weight[LANDMARK] = saved
    assert LANDMARK not in new and len(new) == 9


def test_attention_per_window_stays_bounded_while_the_store_grows(landmark_model):
    seq = LandmarkSequence(Decoder(landmark_model), block_size=4, top_k=2, window=20)
    sizes = []
    for _ in range(4):
        seq.feed(list(range(4, 24)))
        sizes.append(seq.store_bytes())
    assert sizes == [sizes[0] * (i + 1) for i in range(4)]  # linear in the input
    assert seq.stores[0].num_blocks == 20
    assert seq._rope(torch.zeros(1))[0][0].shape[0] == 3 * 4 + 20  # positions never pass (k+1)B + W


@pytest.mark.parametrize(
    "args, message",
    [
        ({"block_size": 1}, "block_size must be at least 2"),
        ({"top_k": 0}, "top_k must be at least 1"),
    ],
)
def test_bad_arguments_get_one_clear_message(args, message):
    with pytest.raises(ValueError, match=message):
        LandmarkArgs(**args)


def test_a_window_that_cannot_fit_the_checkpoint_is_refused(landmark_model):
    with pytest.raises(WindowDoesNotFitError, match="use top_k <= 6"):
        Landmark(LandmarkArgs(top_k=7)).prepare_model(landmark_model)  # T = 32, B = 4


def test_a_model_without_landmarks_is_refused(tiny_model_dir):
    from transformers import AutoConfig

    with pytest.raises(NoLandmarkTokenError, match="has no <landmark> token"):
        Landmark().prepare_config(AutoConfig.from_pretrained(tiny_model_dir))


def test_the_checkpoint_layout_fills_in_unset_arguments(landmark_model):
    method = Landmark(LandmarkArgs(top_k=2))
    method.prepare_model(landmark_model)
    assert method.resolved_args() | {} == {
        "block_size": 4,
        "top_k": 2,
        "train_context_length": 32,
        "selection": "per_token_and_head",
        "landmark_in_loss": True,
        "retrieval": True,
    }
    assert Landmark(LandmarkArgs(block_size=8, top_k=1)).resolved_args()["block_size"] == 8


def test_pieces_fill_the_gather_budget_on_a_gpu_and_stay_at_64_queries_on_the_cpu(landmark_model, monkeypatch):
    """A piece of c queries gathers 2 x H x c x top_k x B x d numbers; on a GPU the largest piece under
    the budget goes through at once (fewer launches), on the CPU 64 queries (the fastest measured),
    or a whole window where the C function reads the blocks in place (float32, a C compiler)."""
    from lm_eval_longmem.kernels.c_library import SWITCH_ENV
    from lm_eval_longmem.kernels.grouped_softmax import retrieval_cpu

    gpu_decoder = SimpleNamespace(device=torch.device("cuda"), dtype=torch.bfloat16, num_heads=32, head_dim=64)
    per_query = 2 * 32 * 5 * 64 * 64 * 2
    assert queries_per_pass(gpu_decoder, 64, 5, 512) == GATHER_BUDGET_BYTES // per_query == 204
    assert queries_per_pass(gpu_decoder, 64, 5, 128) == 128  # the study's window in one piece: never more
    cpu_decoder = Decoder(landmark_model)
    expected = 200 if retrieval_cpu.LIBRARY.available() else 64
    assert queries_per_pass(cpu_decoder, 4, 2, 200) == expected
    bf16_on_cpu = SimpleNamespace(device=torch.device("cpu"), dtype=torch.bfloat16)
    assert queries_per_pass(bf16_on_cpu, 4, 2, 200) == 64
    monkeypatch.setenv(SWITCH_ENV, "0")
    assert queries_per_pass(Decoder(landmark_model), 4, 2, 200) == 64
    assert LandmarkSequence(Decoder(landmark_model), 4, 2, 20).pass_size == 20
