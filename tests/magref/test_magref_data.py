"""The sprite world, the pipeline's anti-copy-paste stages, and the official prompt-file loader."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from iclr26.magref.data import (
    COLOURS,
    N_IDENTITIES,
    ROLES,
    SHAPES,
    TEXTURES,
    WORD_ID,
    confusable_partner,
    identity_attrs,
    identity_id,
    load_prompt_file,
    make_item,
    prompt_tokens,
    sprite,
    tokens_for,
)


def test_identities_round_trip_and_sprites_differ():
    assert N_IDENTITIES == len(SHAPES) * len(COLOURS) * len(TEXTURES)
    assert all(identity_id(*identity_attrs(k)) == k for k in range(N_IDENTITIES))
    shapes = {tuple(sprite(identity_id(s, 0, 0), 6)[1].flatten().tolist()) for s in range(len(SHAPES))}
    assert len(shapes) == len(SHAPES)  # every shape has its own silhouette at 6 px
    pix = {tuple((sprite(k, 6)[0] * sprite(k, 6)[1]).flatten().tolist()) for k in range(N_IDENTITIES)}
    assert len(pix) == N_IDENTITIES


def test_confusable_partners_share_exactly_two_attributes():
    gen = torch.Generator().manual_seed(0)
    for k in range(N_IDENTITIES):
        j = confusable_partner(k, gen)
        assert sum(a == b for a, b in zip(identity_attrs(k), identity_attrs(j), strict=True)) == 2


def test_item_prompt_positions_and_references():
    gen = torch.Generator().manual_seed(3)
    it = make_item(gen, size=16, sprite_size=6, n_frames=5, n_subjects=2, confusable=True)
    assert it.video.shape == (3, 5, 16, 16) and it.positions.shape == (2, 5, 2)
    # prompt = [colour, texture, shape, start, motion] per subject, in slot order
    s, c, t = identity_attrs(it.identities[1])
    assert it.tokens[ROLES : ROLES + 3].tolist() == [WORD_ID[COLOURS[c]], WORD_ID[TEXTURES[t]], WORD_ID[SHAPES[s]]]
    steps = it.positions[:, 1:] - it.positions[:, :-1]
    assert (steps.abs().sum(-1) == 1).all()  # one pixel per frame
    # the two subjects' paths never overlap
    assert (it.positions[0] - it.positions[1]).abs().amax(-1).min() >= 6
    for ref, m in zip(it.references, it.ref_masks, strict=True):
        assert ref.shape == (3, 6, 6) and m.sum() >= 0.7 * 1  # filtered cut-out, mostly visible
        assert torch.equal(ref[:, m == 0], torch.ones(3, int((m == 0).sum())))  # outside the cut-out: white
    one = make_item(gen, size=16, sprite_size=6, n_frames=5, n_subjects=1, confusable=False)
    assert one.tokens[ROLES:].abs().sum() == 0  # the second slot is padding
    with pytest.raises(ValueError, match="n_subjects"):
        make_item(gen, size=16, sprite_size=6, n_frames=5, n_subjects=3, confusable=False)
    with pytest.raises(ValueError, match="size"):
        make_item(gen, size=10, sprite_size=6, n_frames=5, n_subjects=1, confusable=False)


def test_reference_is_not_a_pixel_copy_of_the_clip():
    gen = torch.Generator().manual_seed(5)
    it = make_item(gen, size=16, sprite_size=6, n_frames=5, n_subjects=1, confusable=False)
    spr, m = sprite(it.identities[0], 6)
    y, x = it.positions[0, 0].tolist()
    in_clip = it.video[:, 0, y : y + 6, x : x + 6]
    assert torch.allclose(in_clip[:, m == 1], spr[:, m == 1])  # the clip shows the clean sprite
    assert not torch.allclose(it.references[0][:, m == 1], spr[:, m == 1])  # stage 4 re-rendered the reference


def _png(path, colour, size=(5, 3), mode="RGB"):
    Image.new(mode, size, colour).save(path)
    return path.name


def test_prompt_file_loader_reads_the_official_format(tmp_path):
    a = _png(tmp_path / "a.png", (255, 0, 0))
    b = _png(tmp_path / "b.png", (0, 0, 255, 0), mode="RGBA")  # fully transparent: white after compositing
    f = tmp_path / "prompts.txt"
    f.write_text(f"demo_1@@a red square moving right@@{a}@@{b}\n\ndemo_2@@a blue disk@@{a}\n")
    items = load_prompt_file(f)
    assert [it.key for it in items] == ["demo_1", "demo_2"]
    assert items[0].images[0].shape == (3, 3, 5)
    assert torch.allclose(items[0].images[0][:, 0, 0], torch.tensor([1.0, -1.0, -1.0]))
    assert torch.allclose(items[0].images[1], torch.ones(3, 3, 5))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("onlykey", "expected key@@prompt"),
        ("k@@a prompt", "no reference images"),
        ("k@@a prompt@@missing.png", "not found"),
        ("k@@a prompt@@bad.png", "cannot read"),
        ("k@@@@a.png", "empty key or prompt"),
        ("k@@p@@a.png\nk@@p@@a.png", "duplicate key"),
    ],
)
def test_prompt_file_loader_rejects_bad_lines(tmp_path, line, message):
    _png(tmp_path / "a.png", (0, 255, 0))
    (tmp_path / "bad.png").write_bytes(b"not an image")
    f = tmp_path / "p.txt"
    f.write_text(line + "\n")
    with pytest.raises(ValueError, match=message):
        load_prompt_file(f, max_references=2)


def test_empty_prompt_file_is_an_error(tmp_path):
    f = tmp_path / "p.txt"
    f.write_text("\n\n")
    with pytest.raises(ValueError, match="no prompt lines"):
        load_prompt_file(f)


def test_prompt_tokens_read_subjects_in_order():
    toks = prompt_tokens("A red striped square from topleft moving right, then a blue solid disk moving up.")
    expected = tokens_for([(identity_id(0, 0, 1), "topleft", "right")])[:ROLES].tolist()
    assert toks[:ROLES].tolist() == expected
    assert toks[ROLES : ROLES + 3].tolist() == [WORD_ID["blue"], WORD_ID["solid"], WORD_ID["disk"]]
    assert toks[ROLES + 3] == 0 and toks[ROLES + 4] == WORD_ID["up"]
    assert np.all(prompt_tokens("nothing known here").numpy() == 0)


def test_official_layout_paths_from_the_repository_root_and_extra_references(tmp_path, monkeypatch):
    # assets/multi_id.txt holds paths relative to the repository root, one folder above the file; a 3-reference line
    root = tmp_path / "MAGREF"
    (root / "assets" / "imgs" / "d1").mkdir(parents=True)
    for i in (1, 2, 3):
        _png(root / "assets" / "imgs" / "d1" / f"{i}.png", (80 * i, 0, 0))
    f = root / "assets" / "multi_id.txt"
    refs = "@@".join(f"assets/imgs/d1/{i}.png" for i in (1, 2, 3))
    f.write_text(f"demo_1@@Two people, one in red.@@{refs}\n")
    monkeypatch.chdir(tmp_path)  # not the repository root
    with pytest.warns(UserWarning, match="3 references, the layout holds 2; using the first 2"):
        (item,) = load_prompt_file(f, max_references=2)
    assert [p.name for p in item.paths] == ["1.png", "2.png"] and item.dropped == ("assets/imgs/d1/3.png",)
    assert torch.allclose(item.images[1][:, 0, 0], torch.tensor([160 / 127.5 - 1, -1.0, -1.0]))
