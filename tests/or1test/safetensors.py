"""The safetensors format with numpy alone: the raw header and data of a file, a checked reader
of its arrays, and a raw writer (ref.py adds torch tensors and bfloat16 rounding on top)."""
import json
import struct

import numpy as np

# dtype name -> (numpy dtype used to read the raw bytes, bytes per element)
DTYPES = {
    "F64": (np.float64, 8), "F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2),
    "I64": (np.int64, 8), "I32": (np.int32, 4), "U8": (np.uint8, 1),
}
MAX_HEADER = 100 << 20


def read_raw(path):
    """(header dict, data bytes after the header) of a file whose header length fits in it."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER or 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} exceeds the file")
    return json.loads(blob[8:8 + n].decode("utf-8")), memoryview(blob)[8 + n:]


def read_arrays(path):
    """({name: array as stored, BF16 as raw uint16 bits}, {name: dtype}, metadata).

    Validates what a careful reader must: header bounds, in-file offsets, sizes."""
    header, data = read_raw(path)
    meta = header.pop("__metadata__", {}) or {}
    arrays, dtypes = {}, {}
    for name, e in header.items():
        np_dtype, size = DTYPES[e["dtype"]]
        shape = [int(d) for d in e["shape"]]
        begin, end = (int(o) for o in e["data_offsets"])
        numel = int(np.prod(shape)) if shape else 1
        if not (0 <= begin <= end <= len(data)) or end - begin != numel * size:
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {begin},{end}")
        arrays[name] = np.frombuffer(data[begin:end], dtype=np_dtype).reshape(shape)
        dtypes[name] = e["dtype"]
    return arrays, dtypes, meta


def metadata(path):
    """The __metadata__ map of a file."""
    return read_raw(path)[0].get("__metadata__", {})


def write_raw(path, header, data, header_len=None):
    """Writes a header dict and raw data bytes as a file (header_len may lie)."""
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    n = len(text) if header_len is None else header_len
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + text + data)
