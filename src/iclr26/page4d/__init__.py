"""PAGE-4D (ICLR 2026, arXiv 2510.17568): a dynamics-aware aggregator that extends a static VGGT to dynamic scenes."""

from iclr26.page4d.aggregator import (
    DynamicsMaskHead,
    MaskSchedule,
    dynamics_aware_attention,
    dynamics_bias_vectors,
    mask_strength,
)
from iclr26.page4d.config import Page4DConfig
from iclr26.page4d.data import batch_tensors, load_sequence, load_sequences
from iclr26.page4d.finetune import GroupSpec, StepResult, apply_recipe, train_step, trainable_groups, warmup_cosine
from iclr26.page4d.geometry import (
    DepthMetrics,
    Sim3,
    absolute_trajectory_error,
    depth_metrics,
    extrinsics_to_pose_encoding,
    mask_iou,
    pose_encoding_to_extrinsics,
    relative_pose_error,
    umeyama,
)
from iclr26.page4d.model import Block, Predictions, TinyVGGT, depth_loss, pose_loss, rope_2d
from iclr26.page4d.scene import Scene4D, Sphere, generate_scene, render_frame

__all__ = [
    "Block",
    "DepthMetrics",
    "DynamicsMaskHead",
    "GroupSpec",
    "MaskSchedule",
    "Page4DConfig",
    "Predictions",
    "Scene4D",
    "Sim3",
    "Sphere",
    "StepResult",
    "TinyVGGT",
    "absolute_trajectory_error",
    "apply_recipe",
    "batch_tensors",
    "depth_loss",
    "depth_metrics",
    "dynamics_aware_attention",
    "dynamics_bias_vectors",
    "extrinsics_to_pose_encoding",
    "generate_scene",
    "load_sequence",
    "load_sequences",
    "mask_iou",
    "mask_strength",
    "pose_encoding_to_extrinsics",
    "pose_loss",
    "relative_pose_error",
    "render_frame",
    "rope_2d",
    "train_step",
    "trainable_groups",
    "umeyama",
    "warmup_cosine",
]
