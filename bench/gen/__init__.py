"""Scene-to-Sensor household generator (``python3 -m bench generate``)."""

from .household import GenConfig, Generated, generate, review

__all__ = ["GenConfig", "Generated", "generate", "review"]
