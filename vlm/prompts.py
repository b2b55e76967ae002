"""Prompt templates per task and question kind, and the hash stored with every score.

VLMs answer best when asked one concrete yes/no question about the final frames (VLM-RB, Sharony et al.
2026; RL-VLM-F); the three kinds below are goal satisfaction, progress, and contact plus displacement.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from vlm.errors import VLMError

PromptKind = Literal["goal", "progress", "contact"]

TASK_GOALS: dict[str, str] = {
    "reach": "move its gripper to the small green ball",
    "lift": "pick up the red cube and lift it off the table",
    "push": "push the red cube onto the blue circle",
    "place": "pick up the red cube and put it in the blue bin",
}
"""Goal phrases for the SO-101 tasks; other suites pass their env's ``task_description``."""

TASK_OBJECTS: dict[str, str] = {
    "reach": "green ball",
    "lift": "red cube",
    "push": "red cube",
    "place": "red cube",
}
"""The object a contact question is about, per task."""

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
    goal = goal.strip().rstrip(".")
    if not goal:
        raise VLMError("the prompt needs a non-empty goal description")
    return TEMPLATES[kind].format(goal=goal[0].lower() + goal[1:], object=object_name)


def task_prompt(task: str, kind: PromptKind = "goal") -> str:
    """The prompt for a named SO-101 task (``reach``, ``lift``, ``push``, ``place``)."""
    if task not in TASK_GOALS:
        raise VLMError(
            f"no prompt for task {task!r}; known tasks: {sorted(TASK_GOALS)} (or call make_prompt(goal))"
        )
    return make_prompt(TASK_GOALS[task], kind, TASK_OBJECTS[task])


def clip_goal_prompt(goal: str) -> str:
    """A caption for contrastive scorers from a goal phrase."""
    return CLIP_GOAL_TEMPLATE.format(goal=goal.strip().rstrip("."))


def prompt_hash(prompt: str) -> str:
    """12 hex digits of SHA-256 of the exact prompt text: stored with scores to tell prompts apart."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]
