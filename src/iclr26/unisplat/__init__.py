"""UniSplat (ICLR 2026, arXiv 2511.04595): feed-forward dynamic driving-scene reconstruction with a 3D latent
scaffold, spatio-temporal fusion, a dual-branch Gaussian decoder and a static memory."""

from iclr26.unisplat.config import UniSplatConfig
from iclr26.unisplat.metrics import psnr, ssim
from iclr26.unisplat.model import Frame, Gaussians, StaticMemory, StepOutput, UniSplat, select_static
from iclr26.unisplat.scaffold import VoxelGrid, lift_to_scaffold, unproject, warp_scaffold
from iclr26.unisplat.splat import (
    Projected,
    Rendered,
    covariance_from_scale_rotation,
    project_gaussians,
    quaternion_to_rotation,
    render_gaussians,
    render_reference,
)
from iclr26.unisplat.training import BatchLoss, DriveTerms, LossWeights, batch_loss, drive_loss, drive_terms, frames_of
from iclr26.unisplat.world import DrivingSequence, Street, camera_extrinsic, draw_street, make_sequence, ray_cast

__all__ = [
    "BatchLoss",
    "DriveTerms",
    "LossWeights",
    "UniSplatConfig",
    "batch_loss",
    "drive_loss",
    "drive_terms",
    "frames_of",
    "DrivingSequence",
    "Frame",
    "Gaussians",
    "Projected",
    "Rendered",
    "StaticMemory",
    "StepOutput",
    "Street",
    "UniSplat",
    "VoxelGrid",
    "camera_extrinsic",
    "covariance_from_scale_rotation",
    "draw_street",
    "lift_to_scaffold",
    "make_sequence",
    "project_gaussians",
    "psnr",
    "quaternion_to_rotation",
    "ray_cast",
    "render_gaussians",
    "render_reference",
    "select_static",
    "ssim",
    "unproject",
    "warp_scaffold",
]
