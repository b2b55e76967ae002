"""Learners: SAC (actor, twin critics, temperature), encoders, augmentation, policy export.

Public API (import from the modules; nothing is imported here, so ``import agents`` stays cheap):
``agents.config.SACConfig``, ``agents.sac.SAC(cfg, obs_spec, action_space)`` with ``act``, ``update``,
``state_dict``/``load_state_dict``; ``agents.export.export_policy(sac, path)``, ``export_onnx`` and
``load_policy(path)`` (TorchScript ``policy.pt`` with observation normalisation baked in).
"""
