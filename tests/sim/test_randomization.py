"""Domain randomisation of the SO-101 twin: contract, determinism, episodes differ, each factor acts, bad
settings fail in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robot.contract import JOINT_KEYS, check_env
from sim import SimConfig, make_env
from sim.config import RandomizeConfig
from sim.errors import SimError
from sim.randomization import FACTORS, HELD_OUT_MAGNITUDE, PRESETS, Perturbation, draw, episode_generator

STRONG = RandomizeConfig(preset="strong")
STRONG_RANGES = PRESETS["strong"]


def twin(randomize: RandomizeConfig = STRONG, **overrides: object):
    cfg = SimConfig(task="lift", cameras=("front",), image_size=48, randomize=randomize)
    return make_env(dataclasses.replace(cfg, **overrides))


def test_the_randomised_twin_keeps_the_contract_and_is_deterministic_pixels_included() -> None:
    env = twin(cameras=("front", "wrist"))
    spec = check_env(env, n_steps=8)  # two rollouts from one seed compared on every key, pixels included
    assert spec.cameras == ("front", "wrist")
    env.close()


def rollout(env, seed: int, n_steps: int = 6) -> list[dict[str, np.ndarray]]:
    obs, _ = env.reset(seed=seed)
    out = [obs]
    rng = np.random.default_rng(0)
    for _ in range(n_steps):
        action = rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32)
        out.append(env.step(action)[0])
    return out


def test_a_fixed_seed_gives_the_same_episode_in_a_new_env_and_other_seeds_differ() -> None:
    first, second = twin(), twin()
    a, b = rollout(first, 7), rollout(second, 7)
    for x, y in zip(a, b):
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)
    perturbation = first.perturbation
    other = rollout(first, 8)
    assert first.perturbation != perturbation
    assert not np.array_equal(a[0]["pixels/front"], other[0]["pixels/front"])
    first.close()
    second.close()


def test_another_salt_draws_other_perturbations_from_the_same_seed() -> None:
    env = twin()
    env.reset(seed=3)
    drawn = env.perturbation
    salted = twin(randomize=dataclasses.replace(STRONG, seed_salt=1))
    salted.reset(seed=3)
    assert salted.perturbation.cube_mass_scale != drawn.cube_mass_scale
    env.close()
    salted.close()


def test_randomisation_keeps_the_seeds_start_states_and_changes_only_what_it_draws() -> None:
    nominal, randomised = twin(RandomizeConfig()), twin()
    obs_n, _ = nominal.reset(seed=5)
    obs_r, _ = randomised.reset(seed=5)
    # Same cube place (up to its size change) and arm pose: only the draw differs.
    half = 0.015
    cube_n, cube_r = nominal.sim.cube_position(), randomised.sim.cube_position()
    np.testing.assert_allclose(cube_r[:2], cube_n[:2], atol=1e-6)
    assert cube_r[2] == pytest.approx(half * randomised.perturbation.cube_size_scale, abs=1e-6)
    assert not np.array_equal(obs_n["pixels/front"], obs_r["pixels/front"])
    # The nominal env drew nothing and its model is untouched.
    assert nominal.perturbation == Perturbation()
    nominal.close()
    randomised.close()


def test_each_physical_factor_reaches_the_model_and_a_nominal_reset_restores_it() -> None:
    env = twin(RandomizeConfig())
    model = env.sim.model
    mass, damping = model.body_mass.copy(), model.dof_damping.copy()
    force, fovy = model.actuator_forcerange.copy(), model.cam_fovy.copy()
    p = Perturbation(
        cube_mass_scale=1.5,
        joint_damping_scale=0.5,
        gripper_force_scale=0.8,
        camera_fovy_deg={"front": 4.0},
        cube_size_scale=1.1,
    )
    env.reset(seed=0, options={"perturbation": p})
    cube = model.body("cube").id
    assert model.body_mass[cube] == pytest.approx(1.5 * mass[cube])
    assert model.dof_damping[model.joint("elbow_flex").dofadr[0]] == pytest.approx(
        0.5 * damping[model.joint("elbow_flex").dofadr[0]]
    )
    assert model.actuator_forcerange[model.actuator("gripper").id][1] == pytest.approx(0.8 * force[-1][1])
    assert model.cam_fovy[model.camera("front").id] == pytest.approx(fovy[model.camera("front").id] + 4.0)
    assert model.geom_size[model.geom("cube").id][0] == pytest.approx(0.0165)
    env.reset(seed=0)
    np.testing.assert_array_equal(model.body_mass, mass)
    np.testing.assert_array_equal(model.dof_damping, damping)
    np.testing.assert_array_equal(model.cam_fovy, fovy)
    env.close()


def test_latency_delays_commands_by_whole_control_periods_and_noise_reaches_joint_observations() -> None:
    env = twin(RandomizeConfig(), cameras=())
    obs, _ = env.reset(seed=1, options={"perturbation": Perturbation(latency_steps=2, joint_noise_std=1.0)})
    start = env.sim.joint_targets()
    action = np.array([20.0, -10.0, 15.0, 30.0, 5.0, 50.0], dtype=np.float32)
    env.step(action)
    assert env.sim.joint_targets() == pytest.approx(start, abs=1e-4)  # one period late: not yet sent
    env.step(action)
    assert env.sim.joint_targets() == pytest.approx(start, abs=1e-4)
    obs, *_ = env.step(action)
    sent = env.sim.joint_targets()
    assert [sent[k.removesuffix(".pos")] for k in JOINT_KEYS] == pytest.approx(action.tolist(), abs=1e-3)
    measured = env.sim.joint_positions()
    errors = [obs[k][0] - measured[k.removesuffix(".pos")] for k in JOINT_KEYS]
    assert 0 < np.max(np.abs(errors)) < 5.0
    env.close()


def test_the_held_out_magnitudes_lie_outside_every_training_range() -> None:
    ranges = PRESETS["medium"]
    for seed in range(20):
        train = draw(ranges, episode_generator(seed, 0), ("front",))
        held = draw(ranges, episode_generator(seed, 1), ("front",), HELD_OUT_MAGNITUDE)
        assert abs(train.cube_mass_scale - 1) <= ranges.cube_mass_frac
        assert abs(held.cube_mass_scale - 1) >= ranges.cube_mass_frac
        assert np.linalg.norm(held.camera_offset_m["front"]) >= ranges.camera_pos_m - 1e-12
        assert held.latency_steps == ranges.max_latency_steps
    assert set(FACTORS) <= {f.name for f in dataclasses.fields(RandomizeConfig)}


def test_a_curriculum_scale_shrinks_every_draw_and_zero_is_the_nominal_twin() -> None:
    env = twin()
    env.reset(seed=5)
    full = env.perturbation
    env.reset(seed=5, options={"randomize_scale": 0.0})
    assert env.perturbation.cube_mass_scale == 1.0 and env.perturbation.light_scale == 1.0
    assert env.perturbation.latency_steps == 0 and env.perturbation.joint_noise_std == 0.0
    assert np.linalg.norm(env.perturbation.camera_offset_m["front"]) == 0.0
    for seed in range(8):
        env.reset(seed=seed)
        full = env.perturbation
        env.reset(seed=seed, options={"randomize_scale": 0.5})
        half = env.perturbation
        assert abs(half.cube_mass_scale - 1) <= 0.5 * STRONG_RANGES.cube_mass_frac
        assert abs(half.cube_mass_scale - 1) < abs(full.cube_mass_scale - 1) or full.cube_mass_scale == 1
        assert half.latency_steps <= full.latency_steps
        assert half.texture_contrast <= full.texture_contrast
    with pytest.raises(SimError, match=r"randomize_scale must be in \[0, 1\], got 1.5"):
        env.reset(seed=0, options={"randomize_scale": 1.5})
    env.close()


def test_a_config_read_back_from_json_keeps_its_randomisation() -> None:
    cfg = SimConfig(randomize=RandomizeConfig(preset="light", friction_frac=0.0))
    assert SimConfig(**dataclasses.asdict(cfg)) == cfg


@pytest.mark.parametrize(
    ("randomize", "suite", "message"),
    [
        (RandomizeConfig(preset="wild"), "so101", "unknown randomize preset 'wild'"),
        (RandomizeConfig(camera_pos_m=-0.01), "so101", "randomize.camera_pos_m is a range"),
        (RandomizeConfig(preset="light", max_latency_steps=3), "so101", "at most 2 control periods"),
        (RandomizeConfig(cube_mass_frac=0.9), "so101", "randomize.cube_mass_frac must be below"),
        (RandomizeConfig(preset="light"), "robosuite", "so101 suite only, not 'robosuite'"),
    ],
)
def test_bad_settings_fail_in_one_line(randomize: RandomizeConfig, suite: str, message: str) -> None:
    with pytest.raises(SimError, match=message) as error:
        make_env(SimConfig(suite=suite, task="lift" if suite == "so101" else "Lift", randomize=randomize))  # type: ignore[arg-type]
    assert "\n" not in str(error.value)


def test_calibrated_cameras_get_ranges_from_their_calibration_files_uncertainty(tmp_path) -> None:
    import math

    from calibration import CameraIntrinsics, load_camera, save_camera, save_hand_eye
    from calibration.transforms import look_at

    lens = CameraIntrinsics(np.array([[520.0, 0, 320], [0, 515.0, 240], [0, 0, 1]]), np.zeros(5), (640, 480))
    save_camera("cam", lens, 0.2, tmp_path, std_px={"fx": 2.0, "fy": 5.15, "cx": 1.0, "cy": 1.0})
    pose = look_at(np.array([0.42, 0.22, 0.33]), np.array([0.16, 0.0, 0.04]))
    save_hand_eye(
        "arm", "cam", "eye_to_hand", pose, load_camera("cam", tmp_path), tmp_path, residual=(3.0, 0.5)
    )
    calibrated = {"camera_calibration": {"front": "cam"}, "calibration_dir": str(tmp_path)}
    env = twin(
        RandomizeConfig(preset="light"), cameras=("front", "wrist"), calibration_robot_id="arm", **calibrated
    )
    light = PRESETS["light"]
    fovy = env.calibrated_cameras["front"].fovy_deg
    front, wrist = env._camera_ranges["front"], env._camera_ranges["wrist"]
    # Two standard deviations: the hand-eye residual for the pose, fy's relative std for the field of view.
    assert front.camera_pos_m == pytest.approx(0.006) and front.camera_rot_deg == pytest.approx(1.0)
    assert front.camera_fovy_deg == pytest.approx(2 * math.degrees(math.sin(math.radians(fovy)) * 0.01))
    assert front.light_frac == light.light_frac
    assert (wrist.camera_pos_m, wrist.camera_fovy_deg) == (light.camera_pos_m, light.camera_fovy_deg)
    for seed in range(3):
        env.reset(seed=seed)
        assert np.linalg.norm(env.perturbation.camera_offset_m["front"]) <= 0.006 + 1e-12
        assert env.perturbation.camera_offset_m["front"] != (0.0, 0.0, 0.0)
    env.close()
    # A camera factor given explicitly, calibration_sigmas 0, or a factor the preset leaves off win.
    explicit = RandomizeConfig(preset="light", camera_pos_m=0.03, calibration_sigmas=0.0)
    env = twin(explicit, calibration_robot_id="arm", **calibrated)
    assert env._camera_ranges["front"].camera_pos_m == 0.03
    assert env._camera_ranges["front"].camera_fovy_deg == light.camera_fovy_deg
    assert env.camera_ranges(light.only("color"), RandomizeConfig())["front"].camera_rot_deg == 0
    env.close()
    with pytest.raises(SimError, match="calibration_sigmas must be a finite number >= 0"):
        twin(RandomizeConfig(preset="light", calibration_sigmas=-1.0), **calibrated)


def test_a_config_from_an_older_checkpoint_keeps_the_presets_camera_ranges() -> None:
    from vlmrl.loop.checkpoint import fill_new_fields

    old = RandomizeConfig(preset="light")
    del old.__dict__["calibration_sigmas"]  # as unpickled from before the field existed
    fill_new_fields(old)
    assert old.calibration_sigmas == 0.0 and RandomizeConfig().calibration_sigmas == 2.0
