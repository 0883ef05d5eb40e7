"""MAGREF (ICLR 2026, arXiv 2505.23742): masked guidance and subject disentanglement for any-reference video."""

from iclr26.magref.data import Item, PromptItem, load_prompt_file, make_item, prompt_tokens
from iclr26.magref.flow import euler_sample, flow_matching_loss, interpolate, shifted_sigmas
from iclr26.magref.latent import CausalPatchify
from iclr26.magref.masking import (
    Canvas,
    block_layout,
    composite_canvas,
    dit_input,
    downsample_mask,
    latent_frames,
    mask_channels,
    masked_guidance,
    temporal_reference_frames,
)
from iclr26.magref.metrics import ClipScores, IdentityClassifier, score_clips, train_classifier
from iclr26.magref.model import TinyVideoDiT, inject_values, subject_values
from iclr26.magref.training import Batch, SpriteWorld, TrainSpec, build_batch, draw_items, generate, train

__all__ = [
    "Batch",
    "Canvas",
    "CausalPatchify",
    "ClipScores",
    "IdentityClassifier",
    "Item",
    "PromptItem",
    "SpriteWorld",
    "TinyVideoDiT",
    "TrainSpec",
    "block_layout",
    "build_batch",
    "composite_canvas",
    "dit_input",
    "downsample_mask",
    "draw_items",
    "euler_sample",
    "flow_matching_loss",
    "generate",
    "inject_values",
    "interpolate",
    "latent_frames",
    "load_prompt_file",
    "make_item",
    "mask_channels",
    "masked_guidance",
    "prompt_tokens",
    "score_clips",
    "shifted_sigmas",
    "subject_values",
    "temporal_reference_frames",
    "train",
    "train_classifier",
]
