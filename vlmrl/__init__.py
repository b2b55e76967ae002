"""vlmrl application layer: the CLI, per-pipeline configs, pipelines and run reports."""

__version__ = "0.1.0"
