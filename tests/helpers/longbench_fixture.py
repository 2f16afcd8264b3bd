"""A local task folder in LongBench's formats, for `--include_path`: documents of chosen lengths
over the tiny Llama's words, read from a jsonl by lm-eval's own `json` dataset builder.

`lbfix_qa` mirrors lm-eval's `longbench_qasper` (generation; the `context`/`question`/`answers`
fields and prompt shape; scored by lm-eval's `exact_match`, since LongBench's F1 needs `jieba`);
`lbfix_mc` mirrors `longbench2` (multiple choice A-D over the same documents, `acc`);
`lbfix_babi` mirrors lm-eval's `babilong_qa1` (facts hidden in text, a question, the answer
sentence as target; scored by lm-eval's own babilong `process_results`; its description
shortened and no few-shot examples, so that its lengths stay those of the other two). Group
`lbfix` holds all three. Lengths are in words; the tiny tokenizer makes one token per word.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.helpers.corpus import WORDS

# lm-eval's longbench_qasper and longbench2 prompts, shortened to their shape (JSON strings are YAML)
QA_PROMPT = (
    "You are given an article and a question. Answer as concisely as you can.\n\n"
    "Article: {{context}}\n\n Question: {{question}}\n\nAnswer:"
)
MC_PROMPT = (
    "Please read the following text and answer the question below.\n\n<text>\n{{context}}\n</text>\n\n"
    "What is the correct answer to this question: {{question}}\nChoices:\n(A) {{choices[0]}}\n"
    "(B) {{choices[1]}}\n(C) {{choices[2]}}\n(D) {{choices[3]}}\n\nAnswer:"
)

QA_YAML = """\
task: lbfix_qa
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: {qa_prompt}
doc_to_target: "{{{{answers[0]}}}}"
generation_kwargs:
  max_gen_toks: 3
  do_sample: false
  until: ["."]
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

MC_YAML = """\
task: lbfix_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: {mc_prompt}
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: answer
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

BABI_YAML = """\
task: lbfix_babi
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
description: "I will give you context with the facts hidden in some random text and a question.\\n\\n"
doc_to_text: "{{{{input.strip()}}}}\\n{{{{question.strip()}}}}"
doc_to_target: "{{{{target}}}}"
target_delimiter: " "
process_results: !function lm_eval.tasks.babilong.common_utils.process_results
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
generation_kwargs:
  do_sample: false
  temperature: 0.0
  max_gen_toks: 4
  until: []
metadata:
  version: 1.0
"""

GROUP_YAML = """\
group: lbfix
task:
  - lbfix_qa
  - lbfix_mc
  - lbfix_babi
aggregate_metric_list:
  - metric: acc
    weight_by_size: true
  - metric: exact_match
    weight_by_size: true
metadata:
  version: 1.0
"""


def write_longbench_fixture(folder: Path, context_words: list[int], seed: int = 0) -> Path:
    """The task folder (YAMLs and `docs.jsonl`, one document per entry of `context_words`)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    data = folder / "docs.jsonl"
    with data.open("w", encoding="utf-8") as handle:
        for index, words in enumerate(context_words):
            context = " ".join(rng.choice(WORDS, size=words))
            choices = [str(w) for w in rng.choice(WORDS, size=4, replace=False)]
            record = {
                "_id": f"doc{index}",
                "context": context,
                "question": "what was the last word",
                "answers": [context.split()[-1]],
                "choices": choices,
                "answer": int(rng.integers(0, 4)),
                "length": words,
                "input": context,
                "target": context.split()[-1],
            }
            handle.write(json.dumps(record) + "\n")
    (folder / "lbfix_qa.yaml").write_text(QA_YAML.format(data=data, qa_prompt=json.dumps(QA_PROMPT)))
    (folder / "lbfix_mc.yaml").write_text(MC_YAML.format(data=data, mc_prompt=json.dumps(MC_PROMPT)))
    (folder / "lbfix_babi.yaml").write_text(BABI_YAML.format(data=data))
    (folder / "lbfix.yaml").write_text(GROUP_YAML)
    return folder
