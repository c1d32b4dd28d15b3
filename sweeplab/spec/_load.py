"""Loading a spec file: plain Python that defines a module-level ``sweep = sweeplab.Sweep(...)``."""

from __future__ import annotations

import importlib.util
import re
import sys
import traceback
from pathlib import Path

from sweeplab.errors import SpecError
from sweeplab.spec._sweep import Sweep

__all__ = ["load_spec", "spec_only_modules"]


def load_spec(path: str | Path) -> Sweep:
    """Load a spec file and return its module-level `sweep`.

    The spec's module is registered in `sys.modules`; the engine pickles it by value, so the
    training function reaches Ray workers that cannot import the spec file.

    Raises:
        SpecError: The file is missing, does not compile, fails on import, defines no `sweep`,
            or its `Sweep` breaks a rule. The message names the file (and line, where known).
    """
    spec_path = Path(path)
    if not spec_path.is_file():
        raise SpecError(f"{spec_path}: no such spec file.")
    if spec_path.suffix != ".py":
        raise SpecError(f"{spec_path}: a spec file is a Python file ending in .py.")
    module_name = "sweeplab_spec_" + re.sub(r"\W", "_", spec_path.stem)
    try:
        source = spec_path.read_text(encoding="utf-8")
        code = compile(source, str(spec_path), "exec")
    except SyntaxError as exc:
        raise SpecError(f"{spec_path}:{exc.lineno}: syntax error: {exc.msg}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{spec_path}: cannot read the spec file: {exc}.") from None

    module_spec = importlib.util.spec_from_file_location(module_name, spec_path)
    assert module_spec is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    folder = str(spec_path.resolve().parent)
    added_path = folder not in sys.path
    if added_path:
        sys.path.insert(0, folder)
    paths_before, modules_before = set(sys.path), set(sys.modules)
    try:
        exec(code, module.__dict__)
    except SpecError as exc:
        raise SpecError(f"{spec_path}:{_spec_line(exc, spec_path)}: {exc}") from None
    except Exception as exc:
        line = _spec_line(exc, spec_path)
        raise SpecError(f"{spec_path}:{line}: {type(exc).__name__}: {exc}") from None
    _note_modules_from_added_paths(
        [p for p in sys.path if p not in paths_before], set(sys.modules) - modules_before
    )
    sweep = module.__dict__.get("sweep")
    if sweep is None:
        raise SpecError(f"{spec_path}: defines no module-level `sweep = sweeplab.Sweep(...)`.")
    if not isinstance(sweep, Sweep):
        raise SpecError(
            f"{spec_path}: `sweep` must be a sweeplab.Sweep, but got {type(sweep).__name__}."
        )
    return sweep


# Modules a spec imported from folders it put on `sys.path` itself (see `spec_only_modules`).
_SPEC_ONLY_MODULES: set[str] = set()


def _note_modules_from_added_paths(paths: list[str], names: set[str]) -> None:
    folders = [Path(p).resolve() for p in paths if p]
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file and any(Path(file).resolve().is_relative_to(f) for f in folders):
            _SPEC_ONLY_MODULES.add(name)


def spec_only_modules() -> tuple[str, ...]:
    """Modules that loaded specs imported from folders they put on `sys.path` themselves.

    A Ray worker starts with its own `sys.path` (the spec's folder included), so it cannot
    import them: the engine pickles them by value, as it does the spec.
    """
    return tuple(sorted(_SPEC_ONLY_MODULES))


def _spec_line(exc: BaseException, spec_path: Path) -> str:
    """The line of the spec file where `exc` was raised (the innermost frame in the file)."""
    line = "?"
    resolved = str(spec_path.resolve())
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename in (str(spec_path), resolved):
            line = str(frame.lineno)
    return line
