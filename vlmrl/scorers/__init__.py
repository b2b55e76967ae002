"""Scorers as the app uses them: which one (``choice``: the table and the one ready-scorer function), how good
one is on recordings (``evaluation``), people's labels (``labels``) and code as reward on the twin
(``car_reward``). Above ``loop``; imports nothing of the rooms above it.
"""
