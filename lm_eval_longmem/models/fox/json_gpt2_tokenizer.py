"""The released FoX checkpoints' tokenizer: GPT-2 BPE over JSON-escaped text.

The FoX models were trained on LongCrawl64, whose documents are stored JSON-escaped: a
newline is the two characters `\\n`, a quote is `\\"`, every non-ASCII character is a
`\\u` escape of four hex digits (`\\u00e9` for é). The models therefore only ever saw
escaped text. To give them the text they know, a string is escaped exactly as `json.dumps`
does (without the surrounding quotes) before BPE, and decoded text is unescaped afterwards.
Plain GPT-2 BPE on raw text would feed the model token sequences it never saw in training
(real newlines, raw UTF-8 bytes), and lm-eval would read escape sequences back as answers.

The class keeps the name the checkpoints record in `tokenizer_config.json`
(`"tokenizer_class": "JSONGPT2Tokenizer"`), so `AutoTokenizer` finds it once
`lm_eval_longmem.models.fox` is imported.
"""

from __future__ import annotations

import json

from transformers import GPT2Tokenizer


def json_escape(text: str) -> str:
    """`text` as the inside of a JSON string literal (what LongCrawl64 stores)."""
    return json.dumps(text)[1:-1]


def json_unescape(text: str) -> str:
    """Inverse of `json_escape`; text cut inside an escape (a partial decode) is kept as
    far as it can be read rather than refused."""
    try:
        return json.loads(f'"{text}"')
    except json.JSONDecodeError:
        return text.encode("utf-8", "backslashreplace").decode("unicode_escape", "ignore")


def _escaped(text):
    if isinstance(text, str):
        return json_escape(text)
    if isinstance(text, (list, tuple)):
        return type(text)(_escaped(t) for t in text)
    return text


class JSONGPT2Tokenizer(GPT2Tokenizer):
    """GPT-2 BPE that escapes text like JSON before encoding and unescapes after decoding.

    BOS (`<|endoftext|>`) is prepended by default: the released models were trained and
    evaluated with it (`add_bos_token=True` in the official evaluation scripts).
    """

    def __init__(self, *args, add_bos_token: bool = True, **kwargs):
        super().__init__(*args, add_bos_token=add_bos_token, **kwargs)

    def _encode_plus(self, text, text_pair=None, *args, is_split_into_words: bool = False, **kwargs):
        if not is_split_into_words:
            text, text_pair = _escaped(text), _escaped(text_pair)
        return super()._encode_plus(text, text_pair, *args, is_split_into_words=is_split_into_words, **kwargs)

    def _decode(self, token_ids, *args, **kwargs) -> str:
        return json_unescape(super()._decode(token_ids, *args, **kwargs))
