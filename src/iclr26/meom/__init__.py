"""MEOM (Many Eyes, One Mind, ICLR 2026): temporal multi-perspective and progressive distillation for SNNs.

Drop-in pieces: the LIF neuron with a surrogate gradient, a spiking student / ANN teacher pair, and the losses
(TWD baseline, TMPD "many eyes", TPD "one mind", and :func:`meom_loss` combining them).
"""

from iclr26.meom.lif import LIF, FireAndReset, LIFTrace, SigmoidSurrogateSpike, lif_multistep, spike
from iclr26.meom.losses import (
    MEOMLoss,
    TWDLoss,
    cumulative_mean_logits,
    kd_kl,
    matched_softening,
    mean_entropy,
    meom_loss,
    multi_perspective_teacher_logits,
    per_timestep_ce,
    sample_temporal_masks,
    static_temporal_masks,
    temporal_kd_loss,
    tmpd_loss,
    tpd_loss,
    twd_loss,
)
from iclr26.meom.metrics import (
    accuracy_temporal_variance,
    logit_temporal_variance,
    per_timestep_accuracy,
    prediction_disagreement,
    truncated_accuracy,
)
from iclr26.meom.model import ClassifierHead, ConvTeacher, SpikingConvNet, predict_logits, repeat_input

__all__ = [
    "LIF",
    "ClassifierHead",
    "ConvTeacher",
    "FireAndReset",
    "LIFTrace",
    "MEOMLoss",
    "SigmoidSurrogateSpike",
    "SpikingConvNet",
    "TWDLoss",
    "accuracy_temporal_variance",
    "cumulative_mean_logits",
    "kd_kl",
    "lif_multistep",
    "logit_temporal_variance",
    "matched_softening",
    "mean_entropy",
    "meom_loss",
    "multi_perspective_teacher_logits",
    "per_timestep_accuracy",
    "per_timestep_ce",
    "predict_logits",
    "prediction_disagreement",
    "repeat_input",
    "sample_temporal_masks",
    "spike",
    "static_temporal_masks",
    "temporal_kd_loss",
    "tmpd_loss",
    "tpd_loss",
    "truncated_accuracy",
    "twd_loss",
]
