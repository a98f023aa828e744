"""Model preparation: manifest, wheel extraction, conversion, export and quantization."""

from .registry import (
    DEFAULT_EMBEDDER,
    DEFAULT_LLM,
    ModelRow,
    is_prepared,
    list_models,
    load_manifest,
    model_path,
    prepare,
    resolve_embedder_dir,
    resolve_llm_file,
)

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_LLM",
    "ModelRow",
    "is_prepared",
    "list_models",
    "load_manifest",
    "model_path",
    "prepare",
    "resolve_embedder_dir",
    "resolve_llm_file",
]
