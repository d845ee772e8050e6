"""Large external weights stay out of the ModelProto (a 0.5-1B-parameter decoder's 2-4 GB).

onnx.load with its external data puts every weight in the proto, and the loader's proto steps
(checker, opset upgrade, shape inference, the copies between them) would each hold or serialize
all of it again; past 2 GB protobuf refuses. When a model's external data is large, the proto
keeps only the references (the loader has checked that they lie inside the model's folder, which
the proto's metadata records), every proto step runs on the weightless proto, and each
initializer is read from its file straight into its numpy array when the Graph is built: the
weights are in memory once.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import external_data_helper, helper

LARGE = 256 * 2 ** 20       # bytes of external data from which weights are read lazily


def _fields(tensor: onnx.TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in tensor.external_data}


def external_bytes(proto: onnx.ModelProto) -> int:
    return sum(int(_fields(t).get("length", 0) or 0) for t in external_data_helper._get_all_tensors(proto)
               if external_data_helper.uses_external_data(t))


FOLDER_KEY = "onnx2ncnn.external_data_folder"


def keep_external(proto: onnx.ModelProto, folder: Path) -> None:
    """In place: the data stays in its files, the proto's metadata says where they are."""
    proto.metadata_props.append(onnx.StringStringEntryProto(key=FOLDER_KEY, value=str(folder)))


def external_folder(proto: onnx.ModelProto) -> Path | None:
    return next((Path(e.value) for e in proto.metadata_props if e.key == FOLDER_KEY), None)


def is_lazy(proto: onnx.ModelProto) -> bool:
    return any(external_data_helper.uses_external_data(t) for t in proto.graph.initializer)


def read_external(tensor: onnx.TensorProto, folder: Path) -> np.ndarray:
    """The array of an initializer whose data keep_external left in its file."""
    fields = _fields(tensor)
    fields["location"] = str(folder / fields["location"])
    dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    count = int(np.prod(tensor.dims, dtype=np.int64))
    offset = int(fields.get("offset", 0) or 0)
    if dtype == np.dtype(bool) or tensor.data_type in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
        raw = np.fromfile(fields["location"], dtype=np.uint8, count=int(fields["length"]), offset=offset)
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        del copy.external_data[:]
        copy.data_location = onnx.TensorProto.DEFAULT
        copy.raw_data = raw.tobytes()
        return onnx.numpy_helper.to_array(copy)
    value = np.fromfile(fields["location"], dtype=np.dtype(dtype).newbyteorder("<"), count=count, offset=offset)
    if value.size != count:
        raise ValueError(f"{fields['location']} holds {value.size} of the {count} values of '{tensor.name}'")
    return value.astype(dtype, copy=False).reshape(tuple(tensor.dims))
