"""memfuse_lite."""
