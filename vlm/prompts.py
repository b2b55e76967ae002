"""Prompt templates per question kind, the one prompt builder, and the hash stored with every score.

VLMs answer best when asked one concrete yes/no question about the final frames (VLM-RB, Sharony et al.
2026; RL-VLM-F); the three kinds below are goal satisfaction, progress, and contact plus displacement.

The task description is the one source of prompts: an env's ``task_description`` (for the SO-101 twin,
``sim.so101.tasks``' ``description`` of each task), which ``vlmrl record`` stores with the episodes and a
LeRobotDataset keeps as its task sentence. ``scorer_prompt`` turns it into the text a scorer gets, and
``vlmrl train``, ``vlmrl score`` and ``vlmrl finetune`` all call it, so a score calibration fitted on
recordings (it stores the prompt's hash) is accepted by training on the same task. vlm/ may not import
sim/, so this module knows no task names.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from vlm.errors import VLMError

PromptKind = Literal["goal", "progress", "contact"]

TEMPLATES: dict[str, str] = {
    "goal": (
        "These images are frames from a camera watching a robot arm, oldest first. "
        "The robot's task: {goal}. In the last frame, has the robot completed the task? "
        "Answer yes or no."
    ),
    "progress": (
        "These images are frames from a camera watching a robot arm, oldest first. "
        "The robot's task: {goal}. Over these frames, does the robot get closer to completing the task? "
        "Answer yes or no."
    ),
    "contact": (
        "These images are frames from a camera watching a robot arm, oldest first. "
        "The robot's task: {goal}. Does the gripper touch the {object} and move it? Answer yes or no."
    ),
}
"""Question templates; ``{goal}`` is a goal phrase, ``{object}`` the manipulated object."""

CLIP_GOAL_TEMPLATE = "a robot arm that has managed to {goal}"
"""Goal caption for contrastive (CLIP/SigLIP) scorers, which compare images with a description."""


def make_prompt(goal: str, kind: PromptKind = "goal", object_name: str = "object") -> str:
    """Fills the ``kind`` template with a goal phrase (an env's ``task_description`` works too)."""
    if kind not in TEMPLATES:
        raise VLMError(f"unknown prompt kind {kind!r}; choose one of {sorted(TEMPLATES)}")
    phrase = goal_phrase(goal)
    if not phrase:
        raise VLMError("the prompt needs a non-empty goal description")
    return TEMPLATES[kind].format(goal=phrase, object=object_name)


def goal_phrase(description: str) -> str:
    """A task description as the phrase the templates embed: no final full stop, lower-case first letter
    ("Pick up the red cube." -> "pick up the red cube")."""
    goal = description.strip().rstrip(".").strip()
    return goal[:1].lower() + goal[1:]


def clip_goal_prompt(goal: str) -> str:
    """A caption for contrastive scorers from a goal phrase or task description."""
    phrase = goal_phrase(goal)
    if not phrase:
        raise VLMError("the caption needs a non-empty goal description")
    return CLIP_GOAL_TEMPLATE.format(goal=phrase)


def scorer_prompt(task_description: str, scorer_kind: str = "") -> str:
    """The text a scorer of kind ``scorer_kind`` gets for a task: the goal caption for contrastive scorers
    (``clip``, which compare images with a description), the ``goal`` yes/no question for every other.

    This is the one place prompts are derived from a task; train, score and finetune call it with the
    env's (or the recording's) ``task_description``.
    """
    if scorer_kind == "clip":
        return clip_goal_prompt(task_description)
    return make_prompt(task_description, "goal")


def prompt_hash(prompt: str) -> str:
    """12 hex digits of SHA-256 of the exact prompt text: stored with scores to tell prompts apart."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]
