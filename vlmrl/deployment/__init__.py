"""A trained policy on an arm or its twin: the robot env of a config (``robot_env``) and one policy episode,
fitted to what the policy reads and the units it acts in (``policy_episodes``). Used by `deploy`,
`evaluate`, `record`, `finetune` and the trainer's policy file. Above ``scorers``.
"""
