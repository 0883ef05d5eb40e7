"""Teacher / spiking student: shapes, causality (truncated inference), gradient flow; evaluation metrics."""

from __future__ import annotations

import pytest
import torch

from iclr26.meom import (
    ConvTeacher,
    SpikingConvNet,
    accuracy_temporal_variance,
    logit_temporal_variance,
    meom_loss,
    per_timestep_accuracy,
    predict_logits,
    prediction_disagreement,
    repeat_input,
    truncated_accuracy,
)


def test_teacher_forward_is_head_of_features():
    torch.manual_seed(0)
    teacher = ConvTeacher(1, 10, widths=(4, 8, 16)).eval()
    x = torch.randn(5, 1, 8, 8)
    feats = teacher.features(x)
    assert feats.shape == (5, 16, 4, 4)  # one 2x2 average pool on 8x8 inputs
    torch.testing.assert_close(teacher(x), teacher.head(feats))
    assert teacher.head.num_classes == 10


def test_student_shapes_and_direct_coding():
    torch.manual_seed(0)
    snn = SpikingConvNet(1, 10, timesteps=4, widths=(4, 8, 16))
    x = torch.randn(3, 1, 8, 8)
    assert snn(x).shape == (4, 3, 10)
    spikes = snn.features(x)
    assert spikes.shape == (4, 3, 16, 4, 4)
    assert set(spikes.unique().tolist()) <= {0.0, 1.0}
    rep = repeat_input(x, 4)
    assert rep.shape == (4, 3, 1, 8, 8) and torch.equal(rep[2], x)
    with pytest.raises(ValueError, match="timesteps"):
        repeat_input(x, 0)


def test_truncated_run_equals_prefix_of_full_run():
    # causality: in eval mode (BN running statistics) a t-step run gives the first t outputs of a T-step run,
    # so truncated inference can be read off one T-step pass
    torch.manual_seed(1)
    long = SpikingConvNet(1, 10, timesteps=5, widths=(4, 8, 16))
    with torch.no_grad():  # non-trivial BN statistics
        for m in long.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    short = SpikingConvNet(1, 10, timesteps=2, widths=(4, 8, 16))
    short.load_state_dict(long.state_dict())
    x = torch.randn(6, 1, 8, 8)
    full, prefix = predict_logits(long, x, batch_size=4), predict_logits(short, x, batch_size=4)
    assert full.shape == (5, 6, 10) and prefix.shape == (2, 6, 10)
    torch.testing.assert_close(prefix, full[:2])


def test_surrogate_gradients_reach_every_student_parameter():
    torch.manual_seed(2)
    snn = SpikingConvNet(1, 10, timesteps=3, widths=(4, 8, 16))
    teacher = ConvTeacher(1, 10, widths=(4, 8, 16)).eval()
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))
    with torch.no_grad():
        feats = teacher.features(x)
    meom_loss(snn(x), feats, teacher.head, y).total.backward()
    for name, p in snn.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient reached {name}"


def test_bad_widths_and_timesteps():
    with pytest.raises(ValueError, match="widths"):
        ConvTeacher(1, 10, widths=(4, 8))
    with pytest.raises(ValueError, match="timesteps"):
        SpikingConvNet(1, 10, timesteps=0)


def test_truncated_and_per_step_accuracy_hand_computed():
    # z1 = [[1, 0], [0, 1]], z2 = [[-3, 0], [0.5, 0]], y = (0, 1).
    # truncated: t=1 both right (1.0); zbar2 = [[-1, 0], [0.25, 0.5]] -> argmax (1, 1): 0.5.
    # per step: t=1 1.0; z2 argmax (1, 0): both wrong, 0.0.
    z = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[-3.0, 0.0], [0.5, 0.0]]])
    y = torch.tensor([0, 1])
    assert truncated_accuracy(z, y).tolist() == [1.0, 0.5]
    assert per_timestep_accuracy(z, y).tolist() == [1.0, 0.0]
    # population variance over T = 2 of (a, b) is ((a - b) / 2)^2: elements give 4, 0, 1/16, 1/4 -> mean 1.078125
    assert logit_temporal_variance(z) == pytest.approx(1.078125)
    # accuracies 100 and 50 percent: variance 25^2
    assert accuracy_temporal_variance(torch.tensor([1.0, 0.5])) == pytest.approx(625.0)
    assert logit_temporal_variance(z[:1].expand(4, 2, 2)) == 0.0
    # disagreement: full-length argmax (1, 1); per-step argmax t=1 (0, 1), t=2 (1, 0): 2 of 4 pairs differ
    assert prediction_disagreement(z) == pytest.approx(0.5)
    assert prediction_disagreement(3.0 * z) == pytest.approx(0.5)  # invariant to rescaling the logits
    assert prediction_disagreement(z[:1].expand(4, 2, 2)) == 0.0
    # no single timestep picks the full-length class: z1 = (10, 0, 6), z2 = (0, 10, 6), mean (5, 5, 6) -> class 2
    assert prediction_disagreement(torch.tensor([[[10.0, 0.0, 6.0]], [[0.0, 10.0, 6.0]]])) == 1.0
    with pytest.raises(ValueError, match="logits_per_t"):
        prediction_disagreement(z[0])
    with pytest.raises(ValueError, match="targets"):
        truncated_accuracy(z, torch.tensor([0, 1, 1]))
