"""What verify says about releases: the ncnn another Python imports (--ncnn-python), checked
against the release the converted files need."""
from __future__ import annotations

from converter.ir import ConversionError
from converter.ncnn_side.child import ChildError
from converter.ncnn_side.child import ncnn_version as _child_version
from converter.ncnn_side.releases import parse_release


def ncnn_version(python: str) -> int:
    """The release of the ncnn `python` imports; ConversionError (one line) where it cannot."""
    try:
        return parse_release(_child_version(python).split("+")[0])
    except (ChildError, ValueError) as exc:
        raise ConversionError(str(exc)) from None


def release_warnings(converted, python: str | None, release: int | None) -> list[str]:
    """The fixed-size note of an expression-less target, and a runtime older than the files need."""
    notes = [w for w in converted.stats.get("warnings", []) if "reads no shape expressions" in w]
    needed = converted.stats.get("ncnn_min_version")
    if python is not None and needed and release is not None and release < needed:
        notes.append(f"the files need ncnn {needed} or newer and {python} imports ncnn {release}: convert "
                     f"with --target-ncnn {release}")
    return notes
