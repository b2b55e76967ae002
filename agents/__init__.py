"""Learners: SAC (actor, twin critics, temperature), encoders, augmentation, policy export."""
