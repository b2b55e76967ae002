"""Episodes from Ray env actors (`vlmrl train --actors N`): an ``ExperienceSource`` of the one learner loop.

Layout (as in Ape-X, RLlib and SERL): N actors (``vlmrl.actors.env_actor.EnvActor``, one Ray process each, CPU,
one torch thread) each own an env and a copy of the policy and run whole episodes; the learner process
keeps the agent, the replay buffer (its only writer) and the scoring link, and runs ``Learner.run``
unchanged. ``collect`` hands the loop the next finished episode of any actor: it commits it with
``ReplayBuffer.add_episode`` (the acting policy's version in ``info/policy_version``), then calls the
loop's ``after_step`` once per transition, so updates per env step are those of the single-process loop.

- Weights go out through the object store: one ``ray.put`` of the actor's weights every
  ``weights_every_updates`` updates; requests carry the reference, actors fetch it when it is new to them.
- Each actor has at most ``max_in_flight`` episode requests queued, so actors never run far ahead of the
  learner, and the learner waits for whichever actor finishes first: a slow actor never blocks it.
- An actor that dies (``SIGKILL``) is restarted by Ray (``max_restarts=-1``); one that takes longer than
  ``episode_timeout_s`` is killed so Ray restarts it. Their episodes in flight are lost (never committed,
  counted in ``actors/lost_episodes``); nothing committed is touched. Until a probe (its ``pid``) returns, a
  restarting actor gets no episode requests: Ray refuses calls that reach it while it restarts, and each
  refused request used to count as one more lost episode (14 lost with 2 in flight, issue #36). So at most
  ``max_in_flight`` episodes are lost per death, and every requested episode is committed, lost or in
  flight.
- `vlmrl finetune --actors N` runs ``vlmrl.actors.robot_actor.RobotActor`` the same way (``actor_class``), each
  built from its own arm's config (``actor_configs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray

from vlmrl.actors.env_actor import POLICY_VERSION_KEY, EnvActor, PolicySpec, policy_weights
from vlmrl.errors import USER_ERRORS, ConfigError
from vlmrl.loop.learner import Act

NAMESPACE = "vlmrl"
"""Ray namespace of the env actors (named ``<run name>/env-<i>``, so tools and tests can find them)."""


def connect(address: str) -> None:
    """Join the Ray cluster at ``address``, or start a local one with this machine's cores (empty address);
    nothing to do when this process is connected already (a test's cluster)."""
    if ray.is_initialized():
        return
    try:
        ray.init(
            address=address or None,
            namespace=NAMESPACE,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise ConfigError(f"--ray.address {address!r}: cannot join the Ray cluster: {exc}") from None


@dataclass
class _Slot:
    """One actor and its episode requests in flight (ref -> episode index)."""

    name: str
    handle: Any
    in_flight: dict[Any, int] = field(default_factory=dict)
    busy_since: float = 0.0
    """Monotonic time its current episode started (its last result, or its first request when idle)."""
    down: bool = False
    """Died, or killed for a timeout: gets no requests until ``probe`` returns (its requests in flight fail
    and are counted lost)."""
    probe: Any = None
    """A ``pid`` call sent while it is down; it returns once Ray has restarted the actor."""
    restarts: int = 0
    """Times it died (or was killed) while up."""
    episodes_since_start: int = 0
    """Episodes it returned since it was last (re)started."""
    starting: bool = True
    """Not yet returned an episode since it was (re)started: its imports and env take seconds, which do
    not count against ``episode_timeout_s``."""


@dataclass
class ActorCounters:
    """What the actors did, reported per episode as ``actors/<name>``."""

    episodes: int = 0
    lost_episodes: int = 0
    """Episodes in flight on an actor that died or timed out (never committed)."""
    requested: int = 0
    """Episode requests sent: ``episodes + lost_episodes`` plus those still in flight."""
    timeouts: int = 0
    broadcasts: int = 0


class ActorEpisodes:
    """Episodes from ``num_actors`` Ray env actors (see the module doc).

    Args:
        num_actors: N.
        run_name: names the actors ``<run_name>/env-<i>`` in the ``vlmrl`` namespace.
        make_env, sim_cfg, policy, stored_keys, seed_base: what each ``EnvActor`` is built from.
        buffer: the replay buffer (``add_episode``); built with the ``policy_version`` info key.
        agent: the learner's SAC (its ``num_updates`` is the policy version).
        random_until: acts at random while ``random_until()`` is True (the loop's warm-up).
        ray_cfg: ``RayConfig`` (actor CPUs, broadcast period, in-flight bound, timeout).
        actor_class: the actor kind (``EnvActor``, or ``vlmrl.actors.robot_actor.RobotActor`` for finetune).
        actor_configs: what actor i is built from instead of ``sim_cfg`` (one per actor: each arm's own
            port and id); None: ``sim_cfg`` for all.
        actor_kwargs: more keyword arguments of every actor (e.g. the robot actors' ``action_space``).
    """

    def __init__(
        self,
        num_actors: int,
        run_name: str,
        make_env: Callable[[Any], Any],
        sim_cfg: Any,
        policy: PolicySpec,
        stored_keys: list[str],
        seed_base: int,
        buffer: Any,
        agent: Any,
        random_until: Callable[[], bool],
        ray_cfg: Any,
        *,
        actor_class: type = EnvActor,
        actor_configs: Sequence[Any] | None = None,
        actor_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.buffer, self.agent, self.random_until, self.cfg = buffer, agent, random_until, ray_cfg
        if actor_configs is not None and len(actor_configs) != num_actors:
            raise ConfigError(f"--actors {num_actors}: got {len(actor_configs)} actor configs")
        self.actor_class = actor_class
        self.close_group: str | None = getattr(actor_class, "CLOSE_GROUP", None)
        """Concurrency group in which the actor's ``close`` runs beside its episode (robot actors)."""
        cpus = float(ray.cluster_resources().get("CPU", 0.0))
        if num_actors * ray_cfg.actor_cpus > cpus:
            raise ConfigError(
                f"--actors {num_actors} x --ray.actor-cpus {ray_cfg.actor_cpus:g} needs "
                f"{num_actors * ray_cfg.actor_cpus:g} CPUs, the Ray cluster has {cpus:g}"
            )
        remote = (
            ray.remote(concurrency_groups={self.close_group: 1})(actor_class)
            if self.close_group
            else ray.remote(actor_class)
        )
        self.slots = []
        for i in range(num_actors):
            name = f"{run_name}/env-{i}"
            config = sim_cfg if actor_configs is None else actor_configs[i]
            handle = remote.options(  # type: ignore[attr-defined]
                name=name,
                namespace=NAMESPACE,
                num_cpus=ray_cfg.actor_cpus,
                max_restarts=-1,
                max_task_retries=0,
            ).remote(make_env, config, policy, stored_keys, seed_base, **(actor_kwargs or {}))
            self.slots.append(_Slot(name, handle))
        self.counters = ActorCounters()
        self.next_episode: int | None = None
        self.version = -1
        self.weights_ref: Any = None

    def collect(self, episode: int, act: Act, after_step: Callable[[], None]) -> dict[str, float]:
        """Commit the next episode any actor finishes, then ``after_step`` per transition (see the module
        doc); ``act`` is unused: the actors act with their copy of the policy."""
        if self.next_episode is None:
            self.next_episode = episode
        self._broadcast_if_due()
        self._submit()
        actor, result = self._next_finished()
        self.buffer.add_episode(
            result["obs"], result["action"], result["reward"], result["terminated"], result["truncated"],
            result["info"],
        )  # fmt: skip
        self.counters.episodes += 1
        version = int(result["info"][POLICY_VERSION_KEY][0])
        for _ in range(int(result["stats"]["length"])):
            after_step()
        lag = float(self.agent.num_updates - version) if version >= 0 else 0.0
        return result["stats"] | {
            "actors/policy_lag_updates": lag,
            "actors/lost_episodes": float(self.counters.lost_episodes),
            "actors/timeouts": float(self.counters.timeouts),
            "actors/actor": float(actor),
        }

    def _broadcast_if_due(self) -> None:
        """One ``ray.put`` of the policy when ``weights_every_updates`` updates have passed since the last."""
        updates = int(self.agent.num_updates)
        if self.weights_ref is None or updates - self.version >= self.cfg.weights_every_updates:
            self.weights_ref = ray.put(policy_weights(self.agent))
            self.version = updates
            self.counters.broadcasts += 1

    def _submit(self) -> None:
        """Top every actor up to ``max_in_flight`` episode requests."""
        assert self.next_episode is not None
        random_actions = self.random_until()
        for slot in self.slots:
            if slot.down:
                continue
            if not slot.in_flight:
                slot.busy_since = time.monotonic()
            while len(slot.in_flight) < self.cfg.max_in_flight:
                ref = slot.handle.run_episode.remote(
                    self.next_episode, random_actions, [self.weights_ref], self.version
                )
                slot.in_flight[ref] = self.next_episode
                self.next_episode += 1
                self.counters.requested += 1

    def _next_finished(self) -> tuple[int, dict[str, Any]]:
        """The first finished episode of any actor and that actor's index; dead or timed-out actors' episodes
        are counted lost."""
        while True:
            self._kill_stuck()  # every turn: a stuck actor is found even while the others deliver
            pending = {ref: slot for slot in self.slots for ref in slot.in_flight}
            probes = {slot.probe: slot for slot in self.slots if slot.probe is not None}
            ready, _ = ray.wait([*pending, *probes], num_returns=1, timeout=1.0)
            if not ready:
                continue
            ref = ready[0]
            if ref in probes:
                self._probed(probes[ref], ref)
                continue
            slot = pending[ref]
            del slot.in_flight[ref]
            slot.busy_since = time.monotonic()
            try:
                result = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:  # its episode raised (an arm's emergency stop...)
                if isinstance(exc.cause, USER_ERRORS):  # one line, as without actors, naming the actor
                    raise type(exc.cause)(f"env actor {slot.name}: {exc.cause}") from None
                raise
            except ray.exceptions.RayActorError as exc:  # died (SIGKILL, OOM) or killed: Ray restarts it
                _raise_if_start_failed(slot, exc)
                self.counters.lost_episodes += 1
                slot.restarts += 0 if slot.starting else 1
                slot.starting, slot.episodes_since_start = True, 0
                self._take_down(slot)
                continue
            slot.starting = False
            slot.episodes_since_start += 1
            return self.slots.index(slot), result

    def _take_down(self, slot: _Slot) -> None:
        """No more requests to ``slot`` until a probe says Ray has restarted it."""
        slot.down = True
        if slot.probe is None:
            slot.probe = slot.handle.pid.remote()

    def _probed(self, slot: _Slot, ref: Any) -> None:
        """A down actor's probe returned: it is back (and gets requests again), or probe again."""
        slot.probe = None
        try:
            ray.get(ref)
        except ray.exceptions.RayActorError as exc:  # still dead, or killed while it restarted
            _raise_if_start_failed(slot, exc)
            time.sleep(0.05)  # Ray refuses calls at once until it has noticed the death: do not spin
            slot.probe = slot.handle.pid.remote()
            return
        slot.down = False
        slot.busy_since = time.monotonic()
        self._submit()

    def _kill_stuck(self) -> None:
        """Kill (Ray then restarts it) each actor busy with one episode for over ``episode_timeout_s``."""
        now = time.monotonic()
        for slot in self.slots:
            stuck = now - slot.busy_since > self.cfg.episode_timeout_s
            if slot.in_flight and stuck and not (slot.down or slot.starting):
                self.counters.timeouts += 1
                ray.kill(slot.handle, no_restart=False)
                self._take_down(slot)  # its requests fail with RayActorError and are counted lost then

    def describe(self) -> list[Any]:
        """Every actor's ``describe()`` (a robot actor's ``RobotSide``: what its env observes), once all are
        up; ConfigError in one line for one that cannot start."""
        sides = []
        for slot in self.slots:
            try:
                sides.append(ray.get(slot.handle.describe.remote()))
            except ray.exceptions.RayActorError as exc:
                _raise_if_start_failed(slot, exc)
                raise
        return sides

    def pids(self) -> list[int]:
        """The actors' process ids (waits for each actor to be up)."""
        return [int(ray.get(slot.handle.pid.remote())) for slot in self.slots]

    def close(self, close_timeout_s: float = 30.0) -> None:
        """Stop the actors (their episodes in flight are dropped, as after a crash). Actors with a ``close``
        in their own concurrency group (a robot actor: it ends its episode at the next step and releases
        the arm) are asked to close first, waiting up to ``close_timeout_s`` for all of them."""
        if self.close_group:
            closing = [
                slot.handle.close.options(concurrency_group=self.close_group).remote() for slot in self.slots
            ]
            ray.wait(closing, num_returns=len(closing), timeout=close_timeout_s)
        for slot in self.slots:
            ray.kill(slot.handle, no_restart=True)
            slot.in_flight.clear()


def _raise_if_start_failed(slot: _Slot, exc: Exception) -> None:
    """ConfigError in one line when ``exc`` says the actor could not be built (no restart would help)."""
    if getattr(exc, "actor_init_failed", False):
        cause = [line for line in str(exc).splitlines() if line.strip()][-1].strip()
        raise ConfigError(f"env actor {slot.name} could not start: {cause}") from None
