"""A general-capability probe: what a debiasing method costs outside bias questions.

The paper measures it with BoolQ and COPA (Task Vector loses 14–23 BoolQ points [unverified]); neither is available
offline here, so the probe is written here in the same spirit:

* **Factual QA**: :data:`QA`, 24 short general-knowledge questions with three options each (the first correct),
  scored by forced choice: the option whose tokens have the highest summed log-probability as the reply
  (:meth:`iclr26.common.pretrained.PretrainedLM.choice_logprobs`). Accuracy per item, so two models can be compared
  item by item.
* **Held-out LM loss**: mean negative log-likelihood per token of :data:`TEXT`, 16 plain sentences (no chat
  template), each scored after its first word.
"""

from __future__ import annotations

from dataclasses import dataclass

from iclr26.common.pretrained import PretrainedLM

__all__ = ["QA", "TEXT", "Capability", "probe_capability"]

QA = (
    ("What is the capital of France?", "Paris", "Rome", "Madrid"),
    ("How many days are in a week?", "Seven", "Five", "Ten"),
    ("What do bees make?", "Honey", "Milk", "Silk"),
    ("Which planet is closest to the Sun?", "Mercury", "Jupiter", "Neptune"),
    ("What is frozen water called?", "Ice", "Steam", "Sand"),
    ("What colour is the sky on a clear day?", "Blue", "Green", "Purple"),
    ("How many legs does a spider have?", "Eight", "Six", "Four"),
    ("What is the largest ocean on Earth?", "The Pacific Ocean", "The Arctic Ocean", "The Indian Ocean"),
    ("Which animal is known as the king of the jungle?", "The lion", "The rabbit", "The goat"),
    ("What gas do plants take in from the air?", "Carbon dioxide", "Helium", "Neon"),
    ("What is 2 plus 2?", "4", "5", "22"),
    ("Who wrote Romeo and Juliet?", "William Shakespeare", "Charles Darwin", "Isaac Newton"),
    ("What is the boiling point of water at sea level in Celsius?", "100 degrees", "50 degrees", "10 degrees"),
    ("Which continent is Egypt in?", "Africa", "Europe", "South America"),
    ("What is the opposite of hot?", "Cold", "Loud", "Tall"),
    ("How many hours are in a day?", "24", "12", "60"),
    ("What do cows drink?", "Water", "Oil", "Ink"),
    ("What is the main language spoken in Brazil?", "Portuguese", "German", "Japanese"),
    ("Which organ pumps blood through the body?", "The heart", "The lungs", "The stomach"),
    ("What shape has three sides?", "A triangle", "A square", "A circle"),
    ("What is the capital of Japan?", "Tokyo", "Beijing", "Seoul"),
    ("Which season comes after winter?", "Spring", "Autumn", "Summer"),
    ("What do you use to write on a blackboard?", "Chalk", "Soap", "Glue"),
    ("Which metal is liquid at room temperature?", "Mercury", "Iron", "Copper"),
)

TEXT = (
    "The river flows through the valley and reaches the sea after many miles.",
    "Bread is made from flour, water, salt and yeast, and baked in a hot oven.",
    "The library opens at nine in the morning and closes at six in the evening.",
    "Trains leave the central station every fifteen minutes during the day.",
    "A healthy breakfast can include fruit, yogurt and whole grain cereal.",
    "The museum has a large collection of paintings from the last century.",
    "Rain is expected tomorrow, so remember to bring an umbrella to work.",
    "The students finished their science project two days before the deadline.",
    "Mountains are often covered with snow during the coldest months of the year.",
    "She planted tomatoes and beans in the garden behind the house.",
    "The bridge was closed for repairs, and traffic moved slowly all week.",
    "Computers store information as long sequences of zeros and ones.",
    "The orchestra played a quiet piece before the main concert began.",
    "Most birds build nests in the spring to protect their eggs.",
    "The recipe says to stir the soup gently and let it simmer for an hour.",
    "Maps help travellers find their way through unfamiliar cities.",
)


@dataclass(frozen=True)
class Capability:
    """The probe's result for one model.

    Attributes:
        qa_correct: per :data:`QA` item, whether the correct option scored highest.
        lm_nll: mean negative log-likelihood per token over :data:`TEXT` (nats).
    """

    qa_correct: list[bool]
    lm_nll: float

    @property
    def qa_accuracy(self) -> float:
        """Share of QA items answered correctly."""
        return sum(self.qa_correct) / len(self.qa_correct)


def probe_capability(lm: PretrainedLM, *, n_qa: int = len(QA), n_text: int = len(TEXT)) -> Capability:
    """Run the probe on ``lm`` (the first ``n_qa`` questions and ``n_text`` sentences).

    Raises:
        ValueError: for ``n_qa`` or ``n_text`` outside 1..available.
    """
    if not 1 <= n_qa <= len(QA) or not 1 <= n_text <= len(TEXT):
        raise ValueError(f"n_qa must be in 1..{len(QA)} and n_text in 1..{len(TEXT)}, got {n_qa}, {n_text}")
    qa = QA[:n_qa]
    prompts = [f"Answer with the answer only. {q}" for q, *_ in qa]
    scores = lm.choice_logprobs(prompts, [list(opts) for _, *opts in qa])
    correct = [bool(b == 0) for b in scores.best.tolist()]  # option 0 is the right answer in every QA row
    heads = [s.split(" ", 1) for s in TEXT[:n_text]]
    scored = lm.token_logprobs([h for h, _ in heads], [" " + t for _, t in heads], chat=False)
    # the general-capability proxy for the Task Vector claim: held-out LM loss, nats per continuation token
    nll = float(-(scored.logprobs * scored.mask).sum() / scored.mask.sum())
    return Capability(qa_correct=correct, lm_nll=nll)
