"""Compile the documentation's C++ generation loop against an ncnn built from source and check its
tokens against the Python API's (converter.generation.greedy over the same files in pip ncnn).

    .venv/bin/python scripts/check_cpp_loop.py [--ncnn-src ~/.cache/onnx2ncnn/ncnn-src]
        [--ncnn-build ~/.cache/onnx2ncnn/ncnn-build] [--model models/decoders/qwen3_ts.onnx] [--tokens 16]

The ncnn build (not a test: CI has no C++ ncnn), once, in the background (it takes a while):

    git -C <ncnn bare repo> archive <commit> | tar -x -C ~/.cache/onnx2ncnn/ncnn-src
    cmake -S ~/.cache/onnx2ncnn/ncnn-src -B ~/.cache/onnx2ncnn/ncnn-build -DCMAKE_BUILD_TYPE=Release \\
        -DNCNN_VULKAN=OFF -DNCNN_BUILD_TOOLS=OFF -DNCNN_BUILD_EXAMPLES=OFF -DNCNN_BUILD_BENCHMARK=OFF \\
        -DNCNN_BUILD_TESTS=OFF && make -C ~/.cache/onnx2ncnn/ncnn-build -j2

That is 423 objects (every layer in every x86 variant: over an hour on a busy 2-core machine). Checking
the loop needs far less: `-DNCNN_RUNTIME_CPU=OFF -DNCNN_AVX=OFF` (one SSE2 variant) and
`-DWITH_LAYER_<name>=OFF` for every layer but those the decoders use (BinaryOp Concat Crop
CumulativeSum Embed Flatten GELU Gemm Input Interp MemoryData Noop Permute RMSNorm ReLU Reduction
Reshape RotaryEmbed SDPA Split Swish TanH UnaryOp Softmax Packing Cast Slice Clip ExpandDims Squeeze
Tile InnerProduct MatMul Sigmoid LayerNorm Dropout) build 86 objects into another folder, given here as
--ncnn-build.

The loop is the ```cpp block of README.md or docs/*.md that extracts "present."; it is compiled as
written inside a main() that declares what the prose around it names (net, prompt_net, layers, kv_heads,
head_dim, prompt, n_new) and prints each token the loop appends to `generated`. A loop that keeps no
`generated` gets a `generated.push_back(next)` after `ids.assign(1, next)`, and the script says so.
Prints the two token lists and exits 0 when they are equal, 1 when not, 2 when something is missing.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "onnx2ncnn"
PROMPT = [5, 77, 140]


def fail(message: str) -> None:
    print(message, file=sys.stderr)
    sys.exit(2)

MAIN = """#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include "net.h"

int main(int argc, char** argv)
{{
    ncnn::Net net, prompt_net;      // the decode file and its prompt file, on one .bin
    for (ncnn::Net* n : {{&net, &prompt_net}}) {{
        n->opt.num_threads = 1;
        n->opt.use_fp16_storage = false;
        n->opt.use_fp16_arithmetic = false;
        n->opt.use_fp16_packed = false;
        n->opt.use_bf16_storage = false;
    }}
    if (net.load_param(argv[1]) || net.load_model(argv[2])) return 2;
    if (prompt_net.load_param(argv[3]) || prompt_net.load_model(argv[2])) return 2;
    const int layers = {layers}, kv_heads = {kv_heads}, head_dim = {head_dim}, n_new = {n_new};
    const std::vector<int> prompt = {{{prompt}}};
    std::vector<int> generated;
    {{
{loop}
        for (int token : generated) printf("%d\\n", token);   // the loop's own `generated` if it declares one
    }}
    return 0;
}}
"""


def find_loop(page: Path | None = None) -> tuple[str, Path]:
    pages = [page] if page else [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    for page in pages:
        if page.exists():
            for block in re.findall(r"```cpp\n(.*?)```", page.read_text(), re.S):
                if "present." in block and "past_key_values" in block:
                    return block, page
    fail("no ```cpp block extracting present.* in README.md or docs/")


def shapes(record: dict) -> tuple[int, int, int]:
    """(layers, kv_heads, head_dim) from the record's past inputs (ncnn shape (kv_heads, P, head_dim))."""
    pasts = [e for e in record["inputs"] if e["onnx"].startswith("past_key_values")]
    kv_heads, _, head_dim = pasts[0]["ncnn_shape"]
    return len(pasts) // 2, kv_heads, head_dim


def compile_loop(loop: str, record: dict, tokens: int, src: Path, build: Path, work: Path) -> Path:
    layers, kv_heads, head_dim = shapes(record)
    if "generated" not in loop:
        print("note: the loop keeps no `generated`; checking it with generated.push_back(next) added")
        loop = loop.replace("ids.assign(1, next);", "ids.assign(1, next);\n    generated.push_back(next);")
    code = MAIN.format(layers=layers, kv_heads=kv_heads, head_dim=head_dim, n_new=tokens,
                       prompt=", ".join(map(str, PROMPT)), loop=loop)
    (work / "loop.cpp").write_text(code)
    library = build / "src" / "libncnn.a"
    if not library.exists():
        fail(f"{library} is missing: build ncnn first (see this script's docstring)")
    exe = work / "loop"
    cmd = ["g++", "-O2", "-std=c++11", "-fopenmp", str(work / "loop.cpp"), "-o", str(exe),
           f"-I{src / 'src'}", f"-I{build / 'src'}", str(library), "-lpthread"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        print(code)
        fail(f"the loop does not compile:\n{done.stderr}")
    return exe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ncnn-src", type=Path, default=CACHE / "ncnn-src")
    ap.add_argument("--ncnn-build", type=Path, default=CACHE / "ncnn-build")
    ap.add_argument("--model", type=Path, default=ROOT / "models" / "decoders" / "qwen3_ts.onnx")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--page", type=Path, help="the markdown file holding the loop (default: README.md, docs/)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from converter.cli import main as onnx2ncnn
    from converter.generation import file_step, greedy, prompt_file, read_record
    loop, page = find_loop(args.page)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        param, bin_ = work / "m.ncnn.param", work / "m.ncnn.bin"
        with contextlib.redirect_stdout(io.StringIO()):      # its summary lines
            converted = onnx2ncnn(["convert", str(args.model), "--param", str(param), "--bin", str(bin_), "-q"])
        if converted:
            fail(f"{args.model} did not convert")
        record = read_record(param)
        reference = greedy(*file_step(param, bin_), PROMPT, args.tokens).tokens
        exe = compile_loop(loop, record, args.tokens, args.ncnn_src, args.ncnn_build, work)
        done = subprocess.run([str(exe), str(param), str(bin_), str(prompt_file(param))], capture_output=True, text=True)
        if done.returncode:
            fail(f"the compiled loop failed (exit {done.returncode}): {done.stderr.strip()}")
        got = [int(t) for t in done.stdout.split()]
    print(f"loop from {page}, model {args.model.name}, prompt {PROMPT}")
    print(f"C++ (ncnn from source): {got}")
    print(f"Python API (pip ncnn):  {reference}")
    print(json.dumps({"equal": got == reference}))
    sys.exit(0 if got == reference else 1)


if __name__ == "__main__":
    main()
