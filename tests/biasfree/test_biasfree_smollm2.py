"""The one test on SmolLM2-135M-Instruct: the official vanilla prompt through the chat template, judged."""

from iclr26.biasfree.items import generate_items
from iclr26.biasfree.judge import LABELS, judge_bbq
from iclr26.biasfree.prompts import vanilla_messages
from iclr26.common.pretrained import load_pretrained


def test_smollm2_answers_the_vanilla_prompt_and_the_judge_labels_it():
    lm = load_pretrained(threads=1)  # no skip: CI installs the weights (make test)
    items = generate_items(1, seed=0)[:2]
    convs = [vanilla_messages(it, it.options) for it in items]
    text = lm.format_prompt(convs[0])
    assert "You are a helpful assistant." in text and text.endswith("assistant\n")  # our system prompt, not SmolLM's
    gen = lm.generate(convs, max_new_tokens=6)
    labels = [judge_bbq(r, it.biased_answer, it.anti_answer) for it, r in zip(items, gen.texts, strict=True)]
    assert all(lab in LABELS for lab in labels) and all(gen.texts)
