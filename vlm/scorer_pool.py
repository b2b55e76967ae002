"""A pool of Ray actors that each host a scorer backend, behind the ``Scorer`` protocol (issue #18).

``make_scorer`` builds one when a backend config asks for ``ray.actors > 0``; Ray is imported only then.
A ``score`` call cuts its clips into one chunk per actor (starting at the next actor in turn, so small
batches also spread) and waits for all chunks. Each actor holds at most ``max_in_flight`` unanswered
requests from this pool; a call that would exceed that waits, so clips in memory stay bounded.

Faults: an actor whose process dies fails the chunks it held, and ``score`` raises ``VLMError`` for the
whole call. The ``ScoringWorker`` then puts the batch back in its backlog, counts the failure and retries
after its back-off, so no clip is lost. Ray restarts the actor, rebuilding its backend from the config,
and the retry scores on the restarted actor. ``restarts`` counts the deaths seen.

Label noise: each oracle actor draws its own noise from the same seed, so noisy scores differ from a
single in-process oracle's; noise-free scores are identical.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from vlm.clip import Clip, as_clips
from vlm.config import ScorerConfig, ScorerRayConfig
from vlm.errors import VLMError
from vlm.local_scorer import make_local_scorer


class ScorerHost:
    """The body of one scorer actor: the backend built from its config, in the actor's process."""

    def __init__(self, cfg: ScorerConfig) -> None:
        self.scorer = make_local_scorer(cfg)

    def describe(self) -> tuple[str, str, int]:
        """The backend's scorer id and model id, and the actor's process id (for fault tests)."""
        return self.scorer.scorer_id, self.scorer.model_id, os.getpid()

    def score(self, clips: list[Clip], prompt: str) -> np.ndarray:
        return np.asarray(self.scorer.score(clips, prompt), np.float32)

    def check_source(self, camera: str, image_hw: tuple[int, int]) -> None:
        """The backend's own frame check, if it has one (``scorer:learned``)."""
        check = getattr(self.scorer, "check_source", None)
        if check is not None:
            check(camera, image_hw)


def check_ray_config(ray_cfg: ScorerRayConfig) -> None:
    """Raises a one-line VLMError for settings a pool cannot run with."""
    if ray_cfg.actors < 0:
        raise VLMError(f"scorer ray.actors must be >= 0, got {ray_cfg.actors}")
    if ray_cfg.cpus_per_actor < 0 or ray_cfg.gpus_per_actor < 0:
        raise VLMError("scorer ray.cpus_per_actor and ray.gpus_per_actor must be >= 0")
    if ray_cfg.max_in_flight < 1 or ray_cfg.timeout_s <= 0:
        raise VLMError("scorer ray.max_in_flight must be >= 1 and ray.timeout_s > 0")


class ScorerPool:
    """``cfg.ray.actors`` Ray actors hosting the backend of ``cfg``; see the module docstring.

    Blocks until every actor has built its backend; raises ``VLMError`` with the backend's own message
    when one cannot (an unreachable model, a bad setting).
    """

    def __init__(self, cfg: ScorerConfig) -> None:
        import ray

        check_ray_config(cfg.ray)
        self.cfg = cfg
        self._ray = ray
        self._started_ray = not ray.is_initialized()
        if self._started_ray:  # ray.init reads RAY_ADDRESS; without it, a local cluster starts
            ray.init(log_to_driver=False, configure_logging=False)
        host = ray.remote(ScorerHost).options(
            num_cpus=cfg.ray.cpus_per_actor,
            num_gpus=cfg.ray.gpus_per_actor,
            max_restarts=-1,  # restarted after every death ...
            max_task_retries=0,  # ... but the calls it held fail, so the worker's backlog keeps their clips
        )
        backend_cfg = dataclasses.replace(cfg, ray=ScorerRayConfig())
        self._actors: list[Any] = [host.remote(backend_cfg) for _ in range(cfg.ray.actors)]
        self._slots = [threading.BoundedSemaphore(cfg.ray.max_in_flight) for _ in self._actors]
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self.restarts = 0
        try:
            described = ray.get([a.describe.remote() for a in self._actors], timeout=cfg.ray.timeout_s)
        except ray.exceptions.RayError as exc:
            self.close()
            raise VLMError(f"the scorer actors could not start: {_first_line(exc)}") from None
        self.scorer_id, self.model_id, _ = described[0]

    def actor_pids(self) -> list[int]:
        """The process id of each actor now (a restarted actor has a new one)."""
        return [pid for _, _, pid in self._get([a.describe.remote() for a in self._actors])]

    def check_source(self, camera: str, image_hw: Sequence[int]) -> None:
        """Raises the backend's one-line VLMError when it refuses frames of ``camera`` at ``image_hw``
        (``scorer:learned`` is fitted on one camera and size); the pipelines call it before scoring."""
        self._get([self._actors[0].check_source.remote(camera, (int(image_hw[0]), int(image_hw[1])))])

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """Returns float32 [N] scores; raises VLMError when an actor died or failed (nothing is partial)."""
        batch = as_clips(clips)
        if not batch:
            return np.zeros(0, np.float32)
        first = next(self._turn)
        chunks = [c for c in np.array_split(np.arange(len(batch)), len(self._actors)) if c.size]
        refs = []
        for i, chunk in enumerate(chunks):
            index = (first + i) % len(self._actors)
            slot = self._slots[index]
            slot.acquire()
            try:
                ref = self._actors[index].score.remote([batch[j] for j in chunk], prompt)
            except BaseException:
                slot.release()
                raise
            # Freed when this actor answers (or dies), not when the whole call ends: a call waiting for a
            # slot holds none that waits on it, so concurrent calls (rotating start actors) cannot deadlock.
            ref.future().add_done_callback(lambda _, slot=slot: slot.release())
            refs.append(ref)
        return np.concatenate(self._get(refs)).astype(np.float32)

    def _get(self, refs: list[Any]) -> list[Any]:
        """ray.get with Ray's failures turned into one-line VLMErrors."""
        exceptions = self._ray.exceptions
        try:
            return self._ray.get(refs, timeout=self.cfg.ray.timeout_s)
        except exceptions.RayActorError as exc:
            with self._lock:
                self.restarts += 1
            raise VLMError(
                f"a scorer actor died ({_first_line(exc)}); Ray restarts it and the clips are scored again"
            ) from None
        except exceptions.GetTimeoutError:
            raise VLMError(f"a scorer actor did not answer within {self.cfg.ray.timeout_s:g} s") from None
        except exceptions.RayTaskError as exc:
            raise VLMError(_first_line(exc.cause or exc)) from None

    def close(self) -> None:
        """Ends the actors (and the local Ray cluster, when the pool started it)."""
        for actor in self._actors:
            self._ray.kill(actor, no_restart=True)
        self._actors = []
        if self._started_ray:
            self._ray.shutdown()


def _first_line(exc: BaseException) -> str:
    """The most telling line of an exception Ray passed on: a VLMError's message if one is inside."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("vlm.errors.VLMError:") or line.startswith("VLMError:"):
            return line.split(":", 1)[1].strip()
    return lines[0] if lines else type(exc).__name__
