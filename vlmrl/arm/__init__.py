"""Fine-tuning on arms (`vlmrl finetune`): the trained run it starts from (``trained_run``), the arms it learns
from (``robot_arms``) and its report (``finetune_report``). Above ``online``; below the verbs.
"""
