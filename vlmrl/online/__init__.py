"""Online training in simulation (`vlmrl train`): its config (``config``) and recipes, the trainer, the
report and progress line, what a resume accepts (``resume_check``) and the handover from an offline run
(``offline_handover``). Above ``offline``.
"""
