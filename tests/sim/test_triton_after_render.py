import subprocess
import sys

SCRIPT = """
from sim import make_env
from sim.config import SimConfig
env = make_env(SimConfig(task="reach", cameras=("front",), image_size=32))
env.reset(seed=0)
import torch._dynamo  # imports triton, as transformers models and torch.compile do
print("alive")
"""


def test_triton_can_be_imported_after_rendering():
    """A fresh process (no conftest pre-import) renders, then imports triton: it must not segfault."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "alive" in proc.stdout
