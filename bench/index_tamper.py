"""Changes one byte of a posting list in a copy of an index and re-frames the files, so that every
checksum stays valid and only the engines' decoding can notice (bench/reliability.py).

The frame (index/FORMAT.md): 32-byte header, payload, u64 payload size, u64 XXH3-64 (seed 0) of
everything before it. The manifest names each file with its size and that checksum, as 16 hex
digits; a re-framed postings.bin gets its new checksum written there too, and the manifest is
re-framed in turn. XXH3 comes from libxxhash (the library the index code links), through ctypes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import struct
import subprocess

HEADER = 32
BLOCK = 128


def _load_xxhash():
    for name in ("libxxhash.so.0", ctypes.util.find_library("xxhash") or "libxxhash.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.XXH3_64bits.restype = ctypes.c_uint64
        lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        return lib
    raise RuntimeError("libxxhash not found (Debian: libxxhash0), needed to re-frame index files")


_XXH = _load_xxhash()


def xxh3(data: bytes) -> int:
    return _XXH.XXH3_64bits(data, len(data))


def footer_checksum(data: bytes) -> int:
    return struct.unpack_from("<Q", data, len(data) - 8)[0]


def reframe(data: bytearray) -> int:
    """Rewrites the checksum of a framed file held in `data`; returns it."""
    payload = struct.unpack_from("<Q", data, len(data) - 16)[0]
    if HEADER + payload + 16 != len(data) or data[:8] != b"TANDEMIX":
        raise ValueError("not a framed Tandem file")
    checksum = xxh3(bytes(data[:len(data) - 8]))
    struct.pack_into("<Q", data, len(data) - 8, checksum)
    return checksum


def check_frame(path: str) -> None:
    """Fails unless `path`'s footer checksum is the XXH3 of its bytes (checks the hash itself)."""
    data = open(path, "rb").read()
    if xxh3(data[:-8]) != footer_checksum(data):
        raise RuntimeError(f"{path}: XXH3 through libxxhash does not reproduce the file's checksum")


def lookup(tandem_index: str, index_dir: str, term: str) -> dict | None:
    """df, list offset and bytes of `term` from `tandem-index lookup`; None when not indexed."""
    r = subprocess.run([tandem_index, "lookup", index_dir, term], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    df = re.search(r"^df\s+(\d+)", r.stdout, re.M)
    lst = re.search(r"^list\s+offset (\d+), (\d+) bytes", r.stdout, re.M)
    if not df or not lst:
        raise RuntimeError(f"tandem-index lookup printed no df/list line:\n{r.stdout}")
    return {"df": int(df.group(1)), "offset": int(lst.group(1)), "bytes": int(lst.group(2))}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def frequency_sections(lst: bytes, df: int) -> list[tuple[int, int]]:
    """[start, end) of each frequency section in one list (codec without list parameters)."""
    if df == 1:
        return []
    if df <= BLOCK:  # compact form: varint last docID, varint D, D bytes of docIDs, frequencies
        _, pos = _varint(lst, 0)
        doc_bytes, pos = _varint(lst, pos)
        return [(pos + doc_bytes, len(lst))]
    blocks = (df + BLOCK - 1) // BLOCK
    wide = struct.unpack_from("<H", lst, 2)[0] & 1
    ends = struct.unpack_from(f"<{blocks}I", lst, 4 + 8 * blocks)
    fmt = "I" if wide else "H"
    docs = struct.unpack_from(f"<{blocks}{fmt}", lst, 4 + 12 * blocks)
    doc_bytes = (4 if wide else 2) * blocks
    data = 4 + 12 * blocks + (doc_bytes + 3) // 4 * 4
    out, start = [], 0
    for end, section in zip(ends, docs):
        out.append((data + start + section, data + end))
        start = end
    return out


def tamper(index_dir: str, info: dict, kind: str, rng) -> dict:
    """Changes one byte of the list `info` (lookup()) in index_dir/postings.bin: any byte of the
    list (kind "byte") or one in a frequency section ("frequency"), XOR a random non-zero value;
    re-frames postings.bin and the manifest. Returns where and what changed, or None when the list
    has no frequency section to change."""
    path = f"{index_dir}/postings.bin"
    data = bytearray(open(path, "rb").read())
    old_sum = footer_checksum(data)
    start = HEADER + info["offset"]
    lst = bytes(data[start:start + info["bytes"]])
    if kind == "frequency":
        sections = [s for s in frequency_sections(lst, info["df"]) if s[1] > s[0]]
        if not sections:
            return None
        lo, hi = rng.choice(sections)
        at = rng.randrange(lo, hi)
    else:
        at = rng.randrange(len(lst))
    old = data[start + at]
    data[start + at] = old ^ rng.randrange(1, 256)
    new_sum = reframe(data)
    open(path, "wb").write(data)
    manifest_path = f"{index_dir}/manifest.bin"
    manifest = bytearray(open(manifest_path, "rb").read())
    old_hex, new_hex = f"{old_sum:016x}".encode(), f"{new_sum:016x}".encode()
    if manifest.count(old_hex) != 1:
        raise RuntimeError(f"{manifest_path} does not name postings.bin's checksum {old_hex}")
    at_hex = manifest.index(old_hex)
    manifest[at_hex:at_hex + 16] = new_hex
    reframe(manifest)
    open(manifest_path, "wb").write(manifest)
    form = "compact" if info["df"] <= BLOCK else "full"
    return {"kind": kind, "form": form, "list_byte": at, "old": old, "new": data[start + at]}
