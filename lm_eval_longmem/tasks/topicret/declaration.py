"""What TopicRet declares to the rest of the package (see tasks/declaration.py)."""

from __future__ import annotations

from lm_eval_longmem.data.requirements import HubDataset
from lm_eval_longmem.tasks.declaration import DatasetNeed, TaskDeclaration, TaskOptions, option_given
from lm_eval_longmem.tasks.topicret.headlines import headlines


def _load_topicret():
    from lm_eval_longmem.data.leval_topicret import load_topicret

    return load_topicret()


LEVAL_TOPICRET = HubDataset(
    "leval-topicret", "L4NLP/LEval topic_retrieval_longchat (TopicRet chats)", _load_topicret, "topicret_data=PATH"
)

DECLARATION = TaskDeclaration(
    name="longmem_topicret",
    summary="TopicRet (L-Eval's topic_retrieval_longchat): recall the first, second and third topic of a long chat.",
    options=TaskOptions("topicret_", "lm_eval_longmem.tasks.topicret.protocol:TopicRetOptions"),
    datasets=(DatasetNeed(LEVAL_TOPICRET, lambda options: not option_given(options, "topicret_data")),),
    headlines=headlines,
)
