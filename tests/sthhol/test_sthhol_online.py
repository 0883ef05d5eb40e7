"""The online calendar on hand-worked examples; fine-tuning leaves the slow parameters and the frozen MLP alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import LlamaConfig

from iclr26.sthhol.data import generate_city, windows
from iclr26.sthhol.llm_block import PartiallyFrozenLLM, is_frozen_parameter
from iclr26.sthhol.model import STHHOL, sthhol_loss
from iclr26.sthhol.online import (
    OnlineSchedule,
    UpdateEvent,
    predict_days,
    run_online,
    train_steps,
    update_calendar,
)


def test_calendar_hand_worked():
    # warm-up at day 5; k = day - 5: k=3 fine-tune (8), k=6 retrain (11, due for both), k=9 fine-tune (14),
    # k=12 retrain (17); k=15 would be day 20 = n_days: nothing left to predict, so no update
    events = update_calendar(20, warmup_days=5, finetune_every=3, retrain_every=6)
    assert events == [
        UpdateEvent(5, "warmup"),
        UpdateEvent(8, "finetune"),
        UpdateEvent(11, "retrain"),
        UpdateEvent(14, "finetune"),
        UpdateEvent(17, "retrain"),
    ]


def test_calendar_with_periods_that_do_not_divide():
    # tau = 2, T = 5 from day 3: k = 2, 4 fine-tune (5, 7); k = 5 retrain (8); k = 6, 8 fine-tune (9, 11);
    # k = 10 retrain (13)
    kinds = [(e.day, e.kind) for e in update_calendar(14, warmup_days=3, finetune_every=2, retrain_every=5)]
    assert kinds == [(3, "warmup"), (5, "finetune"), (7, "finetune"), (8, "retrain"), (9, "finetune"),
                     (11, "finetune"), (13, "retrain")]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"warmup_days": 0, "finetune_every": 1, "retrain_every": 1}, "warmup_days"),
        ({"warmup_days": 10, "finetune_every": 1, "retrain_every": 1}, "warmup_days"),
        ({"warmup_days": 2, "finetune_every": 0, "retrain_every": 1}, "finetune_every"),
        ({"warmup_days": 2, "finetune_every": 1, "retrain_every": 0}, "retrain_every"),
    ],
)
def test_calendar_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        update_calendar(10, **kwargs)


def _tiny_llm(seed: int = 0) -> PartiallyFrozenLLM:
    cfg = LlamaConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
                      num_hidden_layers=1, max_position_embeddings=64)  # fmt: skip
    return PartiallyFrozenLLM.random_like(cfg, 1, generator=torch.Generator().manual_seed(seed))


def _tiny_city():
    city = generate_city(n_regions=3, n_categories=2, n_days=30, base_rate=1.0, context_effect=0.5, drift=True,
                         abrupt_day=15, gradual_start=20, gradual_end=25, drift_size=0.5, seed=1)  # fmt: skip
    return windows(city, 3)


def _model(llm):
    return STHHOL(n_regions=3, n_categories=2, n_context=4, window=3, d=4, n_hyperedges=3, llm=llm,
                  generator=torch.Generator().manual_seed(0))  # fmt: skip


def _loss(mod, b):
    return sthhol_loss(mod, mod(b.crime, b.context, b.dow, b.month), b.target, reg_e=0.1, reg_o=0.1)


def test_frozen_mlp_stays_bit_identical_and_trainable_parameters_change():
    torch.manual_seed(0)
    model = _model(_tiny_llm())
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    train_steps(model, model.trainable_parameters(), _tiny_city(), low=3, high=30, steps=3, batch_size=4, lr=1e-2,
                weight_decay=1e-4, loss_fn=_loss, generator=torch.Generator().manual_seed(0))  # fmt: skip
    after = dict(model.named_parameters())
    frozen = [k for k in before if k.startswith("llm.") and is_frozen_parameter(k[len("llm.") :])]
    assert frozen and all(".mlp." in k for k in frozen)
    for k in frozen:
        assert torch.equal(before[k], after[k]), k
    changed = [k for k in before if k not in frozen and not torch.equal(before[k], after[k])]
    for name in ("llm.layers.0.self_attn.q_proj.weight", "llm.layers.0.input_layernorm.weight",
                 "level_one.theta_e", "level_two.theta_o", "crime_w", "head_w"):  # fmt: skip
        assert name in changed, name


def test_fine_tuning_keeps_level_one_and_embeddings_fixed():
    torch.manual_seed(0)
    model = _model(_tiny_llm())
    slow = {id(p) for p in model.slow_parameters()}
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    train_steps(model, model.fast_parameters(), _tiny_city(), low=3, high=30, steps=3, batch_size=4, lr=1e-2,
                weight_decay=1e-4, loss_fn=_loss, generator=torch.Generator().manual_seed(0))  # fmt: skip
    for k, p in model.named_parameters():
        if id(p) in slow:
            assert torch.equal(before[k], p), k
    assert not torch.equal(before["level_two.theta_o"], model.level_two.theta_o)


def _stream(online: bool):
    torch.manual_seed(0)
    model = _model(None)
    sched = OnlineSchedule(warmup_days=8, finetune_every=4, retrain_every=8, warmup_steps=5, finetune_steps=2,
                           retrain_steps=2, finetune_window=6, retrain_window=8, batch_size=4, lr=1e-2,
                           weight_decay=0.0)  # fmt: skip
    res = run_online(model, _tiny_city(), sched, fast_params=model.fast_parameters(),
                     all_params=model.trainable_parameters(), loss_fn=_loss,
                     generator=torch.Generator().manual_seed(0), online=online)  # fmt: skip
    return model, res


def test_run_online_matches_offline_until_the_first_update_then_departs():
    model, res = _stream(online=True)
    assert res.offline.shape == res.online.shape == (22, 3, 2)
    # days 8..11 come before the first fine-tuning (day 12), so the warm-up model predicts them on both paths. The
    # same path gives the same floats: the warm-up model (trained again, same seeds) predicting days 8..11 in one
    # batch, as the online stream does
    warm, _ = _stream(online=False)
    assert (predict_days(warm, _tiny_city(), range(8, 12)) == res.online[:4]).all()
    # the offline path predicts all 22 days in one batch: float32 products blocked differently. Reordering a sum of
    # n terms moves it by at most (n - 1) u sum|terms| (Higham, Accuracy and Stability, Eq. 4.4); no prediction sums
    # more terms than the model has parameters, and |terms| is bounded here by the largest prediction
    n_terms = sum(p.numel() for p in model.parameters())
    tol = n_terms * np.finfo(np.float32).eps * max(1.0, float(np.abs(res.offline).max()))
    assert np.abs(res.offline[:4] - res.online[:4]).max() <= tol
    # afterwards the models differ, by far more than the rounding
    assert np.abs(res.offline[4:] - res.online[4:]).max() > 100 * tol
    assert [(d, k) for d, k, _ in res.losses] == [(8, "warmup"), (12, "finetune"), (16, "retrain"),
                                                  (20, "finetune"), (24, "retrain"), (28, "finetune")]  # fmt: skip
    assert (res.online >= 0).all()


def test_the_ablation_arm_reads_no_context_and_st_hhol_does():
    # the "without level one" arm ignores the context; ST-HHOL reads it through level one
    torch.manual_seed(0)
    full = _model(None)
    ablated = STHHOL(n_regions=3, n_categories=2, n_context=4, window=3, d=4, n_hyperedges=3, llm=None,
                     use_level_one=False, generator=torch.Generator().manual_seed(0))  # fmt: skip
    b = _tiny_city().batch(torch.arange(5, 9))
    other = b.context + 1.0
    assert not torch.equal(full(b.crime, b.context, b.dow, b.month), full(b.crime, other, b.dow, b.month))
    assert torch.equal(ablated(b.crime, b.context, b.dow, b.month), ablated(b.crime, other, b.dow, b.month))
