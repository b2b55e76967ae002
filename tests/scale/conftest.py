"""One local Ray cluster for the scale-out tests (Ray's processes take seconds to start: start them once).

Tests that need their own cluster (a learner that joins by address, a process killed with SIGKILL) use
``ray_address``: the address of this session's cluster, which other processes join with ``--ray.address``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Ray starts its worker processes at niceness 15; beside the test suite's own processes on a 2-core machine they
# then starve (a minutes-long test for seconds of work). Clusters started by these tests, in this process or in
# the subprocesses they spawn, run their workers at the test's priority.
os.environ.setdefault("RAY_worker_niceness", "0")


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """Starts a local Ray cluster with 2 CPUs in this process (no dashboard) and returns its GCS address."""
    import ray

    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()
