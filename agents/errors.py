"""The agents package's error type."""


class AgentError(Exception):
    """Bad agent config or a checkpoint/policy file that does not match."""
