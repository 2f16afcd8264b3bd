"""lm-eval `generate_until` requests as a task hands them to a model."""

from lm_eval.api.instance import Instance

GREEDY = {"until": [], "max_gen_toks": 6, "do_sample": False}


def request(context, gen_kwargs=GREEDY, idx=0):
    return Instance("generate_until", {}, (context, dict(gen_kwargs)), idx, metadata=("task_x", idx, 1))
