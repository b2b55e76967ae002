"""The buffer package's error type: one clear sentence naming the array, episode or file."""


class BufferError(Exception):
    """Bad input to, or unreadable data in, a replay buffer or episode store."""
