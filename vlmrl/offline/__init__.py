"""Offline RL from recorded episodes: the dataset (``datasets``: load, check, label rewards, sample) and the
run (``run``: IQL or BC, its evaluation, checkpoint and files). Above ``actors``.
"""
