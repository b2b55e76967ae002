"""Texture randomisation of the twin's table and cube: the nominal twin renders as before, textures reach
every renderer, draws are deterministic per episode seed and leave the other factors' draws alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

from robot.contract import check_env
from sim import SimConfig, make_env
from sim.config import RandomizeConfig
from sim.errors import SimError
from sim.randomization import PRESETS, Perturbation, Ranges, draw, episode_generator, texture_image
from sim.so101.arm import SO101Sim
from sim.so101.scene import build_scene_xml

TEXTURED = RandomizeConfig(texture=1.0)
SIZE = 48


def twin(randomize: RandomizeConfig = TEXTURED, **overrides: object):
    cfg = SimConfig(task="lift", cameras=("front",), image_size=SIZE, randomize=randomize)
    return make_env(dataclasses.replace(cfg, **overrides))


def table_patch(frame: np.ndarray) -> np.ndarray:
    """The front camera's lower corners: table only, whatever the arm and cube do."""
    rows = frame[-SIZE // 4 :]
    return np.concatenate([rows[:, : SIZE // 4], rows[:, -SIZE // 4 :]], axis=1).astype(np.int16)


def textured(seed: int = 0) -> Perturbation:
    return draw(Ranges(texture=1.0), episode_generator(seed, 0), ("front", "wrist"))


def test_the_texture_asset_does_not_change_the_nominal_twin() -> None:
    # The same scene without the texture and material renders the same pixels: the nominal table has no
    # material, so frames of results made before the factor existed stay valid.
    xml = build_scene_xml(SIZE)
    start, end = xml.index("  <asset>"), xml.index("</asset>") + len("</asset>")
    bare = SO101Sim(max_image_size=SIZE)
    bare.model = type(bare.model).from_xml_string(xml[:start] + xml[end:])
    bare.data = type(bare.data)(bare.model)
    bare.reset()
    sim = SO101Sim(max_image_size=SIZE)
    assert sim.model.ntex == 2 and bare.model.ntex == 0
    assert (
        sim.model.geom_matid[sim.model.geom("table").id]
        == sim.model.geom_matid[sim.model.geom("cube").id]
        == -1
    )
    for camera in ("front", "wrist"):
        np.testing.assert_array_equal(sim.render(camera, SIZE), bare.render(camera, SIZE), err_msg=camera)
    sim.close()
    bare.close()


def test_texture_0_renders_the_nominal_frames_and_a_nominal_reset_restores_them() -> None:
    nominal, off = twin(RandomizeConfig()), twin(RandomizeConfig(texture=0.0))
    env = twin(RandomizeConfig())
    frame = nominal.reset(seed=2)[0]["pixels/front"]
    np.testing.assert_array_equal(off.reset(seed=2)[0]["pixels/front"], frame)
    env.reset(seed=2, options={"perturbation": textured()})
    model = env.sim.model
    assert model.geom_matid[model.geom("cube").id] == model.material("cube").id  # the cube is textured too
    np.testing.assert_array_equal(env.reset(seed=2)[0]["pixels/front"], frame)
    assert model.geom_matid[model.geom("table").id] == model.geom_matid[model.geom("cube").id] == -1
    for e in (nominal, off, env):
        e.close()


def test_texture_changes_the_table_pixels_in_every_renderer() -> None:
    nominal, env = twin(RandomizeConfig()), twin(RandomizeConfig())
    plain = nominal.reset(seed=0)[0]["pixels/front"]
    env.reset(seed=0)
    env.sim.render("wrist", 32)  # a second renderer, made before the texture is written
    p = textured()
    frame = env.reset(seed=0, options={"perturbation": p})[0]["pixels/front"]
    assert np.abs(table_patch(frame) - table_patch(plain)).mean() > 5
    assert table_patch(frame).std() > table_patch(plain).std() + 2  # a pattern, not just another colour
    fresh = twin(RandomizeConfig())
    fresh.reset(seed=0, options={"perturbation": p})
    np.testing.assert_array_equal(env.sim.render("wrist", 32), fresh.sim.render("wrist", 32))
    for e in (nominal, env, fresh):
        e.close()


def test_the_same_seed_gives_the_same_texture_and_other_seeds_other_ones() -> None:
    first, second = twin(), twin()
    first.reset(seed=1)  # an earlier episode's texture must not linger
    a = first.reset(seed=7)[0]["pixels/front"]
    b = second.reset(seed=7)[0]["pixels/front"]
    np.testing.assert_array_equal(a, b)
    drawn = first.perturbation
    assert drawn.texture_contrast > 0
    c = first.reset(seed=8)[0]["pixels/front"]
    assert first.perturbation.texture_noise_seed != drawn.texture_noise_seed
    assert not np.array_equal(table_patch(a), table_patch(c))
    first.close()
    second.close()


def test_the_texture_draw_leaves_the_other_factors_and_the_joint_noise_stream_alone() -> None:
    strong = PRESETS["strong"]
    off = dataclasses.replace(strong, texture=0.0)
    nominal_texture = {f.name: getattr(Perturbation(), f.name) for f in dataclasses.fields(Perturbation)}
    nominal_texture = {k: v for k, v in nominal_texture.items() if k.startswith("texture_")}
    for seed in range(5):
        with_texture = draw(strong, episode_generator(seed, 0), ("front",))
        assert with_texture.texture_contrast > 0
        assert with_texture.texture_checker_cells % 2 == 0  # an odd board would double a square at the seams
        assert draw(off, episode_generator(seed, 0), ("front",)) == dataclasses.replace(
            with_texture, **nominal_texture
        )
    # The env draws per-step joint noise from the episode generator after ``draw``: the generator's next
    # numbers are those it gave before the texture factor existed (values taken from that version).
    for seed, before in ((0, 0.22715759353337972), (5, 0.7427018984357703)):
        rng = episode_generator(seed, 0)
        draw(strong, rng, ("front", "wrist"))
        assert rng.random() == before


def test_texture_images_are_white_at_contrast_0_and_each_pattern_tiles_seamlessly() -> None:
    assert np.all(texture_image(Perturbation(), 16) == 255)
    assert texture_image(textured(3), 64).min() < 200
    base = Perturbation(
        texture_contrast=1.0,
        texture_checker_cells=4,
        texture_stripe_waves=(-2, 3),
        texture_noise_cells=4,
        texture_noise_seed=1,
        texture_tint=(0.0, 0.0, 0.0),
    )
    for mix in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)):
        image = texture_image(dataclasses.replace(base, texture_mix=mix), 64).astype(np.int16)
        for tile in (image, image.transpose(1, 0, 2)):
            # The seam between repeated tiles is no sharper than the pattern's own steps inside the tile.
            seam = np.abs(tile[0] - tile[-1]).mean()
            inside = np.abs(np.diff(tile, axis=0)).mean(axis=(1, 2)).max()
            assert seam <= 1.05 * inside + 1, mix


@pytest.mark.filterwarnings("ignore::UserWarning")  # gymnasium's advice on unnormalised Box bounds
def test_the_textured_twin_keeps_the_contract_and_gymnasiums_checks() -> None:
    env = twin(cameras=("front", "wrist"))
    check_env(env, n_steps=4)  # two rollouts from one seed compared on every key, pixels included
    gymnasium_check_env(env, skip_render_check=True)
    env.close()


def test_a_config_from_before_the_factor_keeps_its_preset_without_textures() -> None:
    from vlmrl.loop.checkpoint import fill_new_fields

    old = RandomizeConfig(preset="light")
    del old.__dict__["texture"]  # as unpickled from before the field existed
    fill_new_fields(old)
    assert old.texture == 0.0 and PRESETS["light"].texture > 0
    env = twin(old)
    assert not env.randomize_ranges.texture
    env.close()
    # A config stored as JSON before the factor (a recording's sim_config) likewise.
    assert SimConfig(randomize={"preset": "light"}).randomize.texture == 0.0  # type: ignore[arg-type]
    stored = dataclasses.asdict(SimConfig(randomize=RandomizeConfig(preset="light")))
    assert SimConfig(**stored).randomize.texture is None  # a config from now keeps the preset's texture


@pytest.mark.parametrize(
    ("randomize", "suite", "message"),
    [
        (RandomizeConfig(texture=-0.1), "so101", "randomize.texture is a range"),
        (RandomizeConfig(texture=1.5), "so101", "randomize.texture must be at most 1"),
        (RandomizeConfig(texture=0.3), "robosuite", "so101 suite only, not 'robosuite'"),
    ],
)
def test_bad_texture_settings_fail_in_one_line(randomize: RandomizeConfig, suite: str, message: str) -> None:
    with pytest.raises(SimError, match=message) as error:
        make_env(SimConfig(suite=suite, task="lift" if suite == "so101" else "Lift", randomize=randomize))  # type: ignore[arg-type]
    assert "\n" not in str(error.value)
