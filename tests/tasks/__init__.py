"""Tests of our lm-eval tasks (forgetting curve, passkey, perplexity, TREC, TopicRet) and the task registry."""
