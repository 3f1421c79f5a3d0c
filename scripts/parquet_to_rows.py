#!/usr/bin/python3
"""Converts the published Skywork-OR1-RL-Data parquet files to the JSONL rows or1 reads.

    /usr/bin/python3 scripts/parquet_to_rows.py IN.parquet [IN2.parquet ...] --out OUT.jsonl [--limit N]

Debian has no pyarrow, so this file carries its own Parquet reader, written from the format's
specification (parquet.thrift and Encodings.md of apache/parquet-format): the footer and page
headers in Thrift's compact protocol; data pages v1 and v2 and dictionary pages; PLAIN,
PLAIN_DICTIONARY / RLE_DICTIONARY and the RLE / bit-packed hybrid (levels, dictionary indices,
booleans), DELTA_BINARY_PACKED for integers; UNCOMPRESSED, SNAPPY (python3-snappy), GZIP (zlib)
and ZSTD (python3-zstandard) pages; nested records rebuilt from repetition and definition levels
(structs, lists in the three-level and the legacy layouts, maps, nulls at any depth).

Each output line is one row in the or1 shape: data_source, prompt [{role, content}], ability,
reward_model {ground_truth, style}, extra_info {index, model_difficulty {model: int or null}, and
any other keys the file has}. The output is written to a temporary file next to OUT and renamed
when every row is written, so an error (its message names the file and the place: the footer, a
row group, a column, a page, a row) leaves no OUT behind. The summary (rows, rows per data_source)
goes to stdout; errors go to stderr with exit status 1.
"""
import argparse
import json
import os
import struct
import sys
import tempfile
import zlib

MAGIC = b"PAR1"

# parquet.thrift enums (the numbers are the format's; the names are ours for messages).
TYPES = {0: "BOOLEAN", 1: "INT32", 2: "INT64", 3: "INT96", 4: "FLOAT", 5: "DOUBLE", 6: "BYTE_ARRAY",
         7: "FIXED_LEN_BYTE_ARRAY"}
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2
ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
             6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}
CODECS = {0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD", 7: "LZ4_RAW"}
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
CONVERTED_UTF8, CONVERTED_MAP, CONVERTED_MAP_KEY_VALUE, CONVERTED_LIST, CONVERTED_ENUM = 0, 1, 2, 3, 4
CONVERTED_JSON = 19
LOGICAL_STRING, LOGICAL_MAP, LOGICAL_LIST, LOGICAL_ENUM, LOGICAL_JSON = 1, 2, 3, 4, 12
JULIAN_UNIX_EPOCH = 2440588  # the Julian day number of 1970-01-01, for INT96 timestamps


class ParquetError(Exception):
    """A file that cannot be read: the message names the file and the place in it."""


# ---------------------------------------------------------------------------------------------
# Thrift compact protocol (the footer's FileMetaData and every PageHeader are encoded with it)
# ---------------------------------------------------------------------------------------------

class Compact:
    """Reads Thrift compact-protocol values from buf[pos:end]; structs come back as dicts keyed
    by field id, so that the callers name the fields of parquet.thrift they use. Every read is
    bounds-checked: a truncated or hostile footer raises ParquetError naming `where`."""

    MAX_DEPTH = 64

    def __init__(self, buf, pos, end, where):
        self.buf, self.pos, self.end, self.where = buf, pos, end, where

    def fail(self, what):
        """Raises ParquetError for what went wrong at the current byte."""
        raise ParquetError(f"{self.where}: {what} (at byte {self.pos})")

    def byte(self):
        """One unsigned byte."""
        if self.pos >= self.end:
            self.fail("truncated Thrift data")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self):
        """An unsigned LEB128 varint (at most 10 bytes, as for a 64-bit value)."""
        shift, value = 0, 0
        for _ in range(10):
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        self.fail("varint longer than 10 bytes")

    def zigzag(self):
        """A zigzag-encoded signed varint (i16, i32 and i64 all use it)."""
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def take(self, n):
        """n raw bytes."""
        if n < 0 or self.pos + n > self.end:
            self.fail(f"a length of {n} bytes runs past the end")
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def value(self, ctype, depth):
        """A value of compact type ctype (the 4-bit type of a field or collection element)."""
        if depth > self.MAX_DEPTH:
            self.fail("Thrift structures nested too deep")
        if ctype in (1, 2):  # booleans inside a collection are one byte each
            return self.byte() == 1
        if ctype == 3:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ctype in (4, 5, 6):
            return self.zigzag()
        if ctype == 7:
            return struct.unpack("<d", self.take(8))[0]
        if ctype == 8:
            return self.take(self.varint())
        if ctype in (9, 10):
            return self.collection(depth)
        if ctype == 11:
            return self.map(depth)
        if ctype == 12:
            return self.struct(depth + 1)
        self.fail(f"unknown Thrift compact type {ctype}")

    def collection(self, depth):
        """A list or set: size and element type in one byte (size 15 means a varint follows)."""
        head = self.byte()
        size, etype = head >> 4, head & 0x0F
        if size == 15:
            size = self.varint()
        if size > self.end - self.pos and etype not in (1, 2):  # every element takes a byte at least
            self.fail(f"a list of {size} elements cannot fit in the bytes left")
        return [self.value(etype, depth + 1) for _ in range(size)]

    def map(self, depth):
        """A map: varint size, then one byte of key and value types unless it is empty."""
        size = self.varint()
        if size == 0:
            return {}
        if 2 * size > self.end - self.pos:
            self.fail(f"a map of {size} entries cannot fit in the bytes left")
        types = self.byte()
        out = {}
        for _ in range(size):
            k = self.value(types >> 4, depth + 1)
            out[k] = self.value(types & 0x0F, depth + 1)
        return out

    def struct(self, depth=0):
        """A struct as {field id: value}; field ids are deltas from the previous one unless the
        delta nibble is zero, in which case a zigzag i16 id follows."""
        if depth > self.MAX_DEPTH:
            self.fail("Thrift structures nested too deep")
        out, last = {}, 0
        while True:
            head = self.byte()
            if head == 0:
                return out
            delta, ctype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            if ctype == 1:
                out[fid] = True
            elif ctype == 2:
                out[fid] = False
            else:
                out[fid] = self.value(ctype, depth)
            last = fid


def need(d, fid, what, where):
    """Field fid of a decoded Thrift struct, or ParquetError naming the missing field."""
    if fid not in d:
        raise ParquetError(f"{where}: the {what} field is missing")
    return d[fid]


# ---------------------------------------------------------------------------------------------
# The footer and the schema tree
# ---------------------------------------------------------------------------------------------

class Node:
    """One schema element: a group (children) or a leaf (a physical type); max_def and max_rep
    are the definition and repetition levels of a value present at this node."""

    def __init__(self, el, parent):
        self.name = need(el, 4, "SchemaElement.name", "schema").decode("utf-8", "replace")
        self.type = el.get(1)
        self.type_length = el.get(2, 0)
        self.repetition = el.get(3, REQUIRED) if parent is not None else REQUIRED
        self.num_children = el.get(5, 0)
        self.converted = el.get(6)
        self.logical = el.get(10, {})
        self.children = []
        self.parent = parent
        up_def = parent.max_def if parent else 0
        up_rep = parent.max_rep if parent else 0
        self.max_def = up_def + (self.repetition != REQUIRED)
        self.max_rep = up_rep + (self.repetition == REPEATED)
        self.path = (parent.path + [self.name]) if parent and parent.parent else ([self.name] if parent else [])

    def is_leaf(self):
        """True for a primitive column (no children)."""
        return self.num_children == 0 and self.type is not None

    def is_string(self):
        """True if BYTE_ARRAY values are text (UTF8 / STRING / ENUM / JSON annotations)."""
        return self.converted in (CONVERTED_UTF8, CONVERTED_ENUM, CONVERTED_JSON) or any(
            k in self.logical for k in (LOGICAL_STRING, LOGICAL_ENUM, LOGICAL_JSON))

    def is_list(self):
        """True for a group annotated LIST."""
        return self.converted == CONVERTED_LIST or LOGICAL_LIST in self.logical

    def is_map(self):
        """True for a group annotated MAP (or the legacy MAP_KEY_VALUE on the outer group)."""
        return self.converted in (CONVERTED_MAP, CONVERTED_MAP_KEY_VALUE) or LOGICAL_MAP in self.logical


def build_schema(elements, where):
    """The schema tree from the footer's depth-first list of SchemaElements; returns the root
    and its leaves in column order."""
    if not elements:
        raise ParquetError(f"{where}: the schema is empty")
    pos = 0

    def grow(parent):
        """Reads the element at pos and, for a group, its children."""
        nonlocal pos
        if pos >= len(elements):
            raise ParquetError(f"{where}: the schema ends inside a group")
        node = Node(elements[pos], parent)
        pos += 1
        if node.num_children < 0 or node.num_children > len(elements):
            raise ParquetError(f"{where}: schema element {node.name!r} claims {node.num_children} children")
        for _ in range(node.num_children):
            node.children.append(grow(node))
        if node.num_children == 0 and node.type is None and parent is not None:
            raise ParquetError(f"{where}: schema element {node.name!r} has neither a type nor children")
        return node

    root = grow(None)
    if pos != len(elements):
        raise ParquetError(f"{where}: {len(elements) - pos} schema elements lie outside the root")
    leaves = []

    def collect(n):
        """Appends the leaves under n in depth-first order (the column chunk order)."""
        if n.is_leaf():
            leaves.append(n)
        for c in n.children:
            collect(c)

    collect(root)
    return root, leaves


def read_footer(buf, name):
    """The decoded FileMetaData of a whole file's bytes, after checking both magics and the
    footer length."""
    if len(buf) < 12:
        raise ParquetError(f"{name}: not a parquet file ({len(buf)} bytes, too short for the magic and footer)")
    if buf[:4] != MAGIC:
        raise ParquetError(f"{name}: not a parquet file (no PAR1 magic at the start)")
    if buf[-4:] != MAGIC:
        raise ParquetError(f"{name}: not a parquet file or truncated (no PAR1 magic at the end)")
    flen = struct.unpack("<I", buf[-8:-4])[0]
    if flen + 12 > len(buf):
        raise ParquetError(f"{name}: footer length {flen} runs past the start of the {len(buf)}-byte file")
    start = len(buf) - 8 - flen
    meta = Compact(buf, start, len(buf) - 8, f"{name}: footer").struct()
    return meta


# ---------------------------------------------------------------------------------------------
# Decompression and the value encodings
# ---------------------------------------------------------------------------------------------

def decompress(codec, data, size, where):
    """A page body decompressed with the column's codec to exactly `size` bytes."""
    if codec == 0:
        out = data
    elif codec == 1:
        try:
            import snappy
        except ImportError:
            raise ParquetError(f"{where}: SNAPPY pages need the Debian package python3-snappy")
        try:
            out = snappy.uncompress(data)
        except Exception as e:
            raise ParquetError(f"{where}: bad SNAPPY data ({e})")
    elif codec == 2:
        out = gunzip_members(data, where)
    elif codec == 6:
        try:
            import zstandard
        except ImportError:
            raise ParquetError(f"{where}: ZSTD pages need the Debian package python3-zstandard")
        try:
            out = zstandard.ZstdDecompressor().decompress(data, max_output_size=max(size, 1))
        except Exception as e:
            raise ParquetError(f"{where}: bad ZSTD data ({e})")
    else:
        raise ParquetError(f"{where}: unsupported compression {CODECS.get(codec, codec)}")
    if len(out) != size:
        raise ParquetError(f"{where}: page decompressed to {len(out)} bytes, the header says {size}")
    return out


def gunzip_members(data, where):
    """GZIP data, which may hold several gzip members one after another."""
    out, rest = [], data
    try:
        while rest:
            d = zlib.decompressobj(wbits=31)
            out.append(d.decompress(rest))
            if not d.eof:
                raise ParquetError(f"{where}: truncated GZIP data")
            rest = d.unused_data
    except zlib.error as e:
        raise ParquetError(f"{where}: bad GZIP data ({e})")
    return b"".join(out)


class Bytes:
    """A cursor over a decompressed page body with bounds-checked reads."""

    def __init__(self, buf, where, pos=0, end=None):
        self.buf, self.where, self.pos = buf, where, pos
        self.end = len(buf) if end is None else end

    def take(self, n):
        """n bytes, or ParquetError if fewer are left."""
        if n < 0 or self.pos + n > self.end:
            raise ParquetError(f"{self.where}: needs {n} bytes at offset {self.pos}, {self.end - self.pos} left")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def varint(self):
        """An unsigned LEB128 varint."""
        shift, value = 0, 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 70:
                raise ParquetError(f"{self.where}: varint too long at offset {self.pos}")

    def zigzag(self):
        """A zigzag signed varint."""
        v = self.varint()
        return (v >> 1) ^ -(v & 1)


def unpack_bits(data, width, count):
    """count unsigned integers of `width` bits packed LSB first (the hybrid's bit-packed runs)."""
    if width == 0:
        return [0] * count
    big = int.from_bytes(data, "little")
    mask = (1 << width) - 1
    return [(big >> (i * width)) & mask for i in range(count)]


def rle_hybrid(cur, width, count):
    """count values of the RLE / bit-packed hybrid of bit width `width` read from cur; runs may
    hold more values than needed (the last bit-packed group is padded to 8)."""
    out = []
    nbytes = (width + 7) // 8
    while len(out) < count:
        head = cur.varint()
        if head & 1:
            groups = head >> 1
            if groups == 0:
                raise ParquetError(f"{cur.where}: empty bit-packed run")
            for _ in range(groups):
                out.extend(unpack_bits(cur.take(width), width, 8))
        else:
            run = head >> 1
            if run == 0:
                raise ParquetError(f"{cur.where}: empty RLE run")
            value = int.from_bytes(cur.take(nbytes), "little") if nbytes else 0
            out.extend([value] * min(run, count - len(out)))
    return out[:count]


def plain_values(cur, node, count):
    """count PLAIN-encoded values of the leaf's physical type."""
    t = node.type
    if t == 0:
        return [bool(b) for b in unpack_bits(cur.take((count + 7) // 8), 1, count)]
    if t in (1, 2, 4, 5):
        fmt, size = {1: ("i", 4), 2: ("q", 8), 4: ("f", 4), 5: ("d", 8)}[t]
        return list(struct.unpack(f"<{count}{fmt}", cur.take(size * count)))
    if t == 3:
        out = []
        for _ in range(count):
            nanos, day = struct.unpack("<qi", cur.take(12))
            out.append((day - JULIAN_UNIX_EPOCH) * 86400 * 10**9 + nanos)
        return out
    if t == 6:
        out = []
        for _ in range(count):
            n = struct.unpack("<I", cur.take(4))[0]
            out.append(bytes(cur.take(n)))
        return [text(v, node, cur.where) for v in out] if node.is_string() else out
    if t == 7:
        out = [bytes(cur.take(node.type_length)) for _ in range(count)]
        return [text(v, node, cur.where) for v in out] if node.is_string() else out
    raise ParquetError(f"{cur.where}: unknown physical type {t}")


def text(b, node, where):
    """A string column's bytes as str; invalid UTF-8 is an error naming the column."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParquetError(f"{where}: invalid UTF-8 in string column {'.'.join(node.path)} ({e})")


def delta_binary_packed(cur, count):
    """count integers of DELTA_BINARY_PACKED: a header (block size, miniblocks per block, total,
    first value), then blocks of a zigzag min delta, one bit width per miniblock and the
    miniblocks of (delta - min delta) bit-packed."""
    block, minis, total = cur.varint(), cur.varint(), cur.varint()
    value = cur.zigzag()
    if minis == 0 or block % minis or (block // minis) % 8:
        raise ParquetError(f"{cur.where}: bad DELTA_BINARY_PACKED header (block {block}, miniblocks {minis})")
    per_mini = block // minis
    out = [value] if total else []
    while len(out) < total:
        min_delta = cur.zigzag()
        widths = list(cur.take(minis))
        for w in widths:
            if len(out) >= total:
                break
            for d in unpack_bits(cur.take(per_mini * w // 8), w, per_mini):
                if len(out) >= total:
                    break
                value += min_delta + d
                out.append(value)
    if total < count:
        raise ParquetError(f"{cur.where}: DELTA_BINARY_PACKED holds {total} values, the page needs {count}")
    return out[:count]


def decode_values(cur, node, encoding, count, dictionary):
    """count values of a data page in the given encoding (dictionary: the chunk's decoded
    dictionary page, for the dictionary encodings)."""
    if encoding == 0:
        return plain_values(cur, node, count)
    if encoding in (2, 8):
        if dictionary is None:
            raise ParquetError(f"{cur.where}: dictionary-encoded page without a dictionary page")
        width = cur.take(1)[0] if count else 0
        if width > 32:
            raise ParquetError(f"{cur.where}: dictionary index width {width} > 32")
        idx = rle_hybrid(cur, width, count)
        try:
            return [dictionary[i] for i in idx]
        except IndexError:
            raise ParquetError(f"{cur.where}: dictionary index beyond its {len(dictionary)} entries")
    if encoding == 3 and node.type == 0:
        n = struct.unpack("<I", cur.take(4))[0]
        sub = Bytes(cur.buf, cur.where, cur.pos, cur.pos + n)
        cur.pos += n
        return [bool(v) for v in rle_hybrid(sub, 1, count)]
    if encoding == 5 and node.type in (1, 2):
        return delta_binary_packed(cur, count)
    raise ParquetError(f"{cur.where}: unsupported encoding {ENCODINGS.get(encoding, encoding)} "
                       f"for a {TYPES.get(node.type, node.type)} column")


def levels_v1(cur, encoding, max_level, count):
    """A v1 data page's repetition or definition levels: RLE hybrid after a 4-byte length."""
    if max_level == 0:
        return [0] * count
    if encoding != 3:
        raise ParquetError(f"{cur.where}: unsupported level encoding {ENCODINGS.get(encoding, encoding)}")
    n = struct.unpack("<I", cur.take(4))[0]
    sub = Bytes(cur.buf, cur.where, cur.pos, cur.pos + n)
    if sub.end > cur.end:
        raise ParquetError(f"{cur.where}: levels of {n} bytes run past the page")
    cur.pos += n
    return rle_hybrid(sub, max_level.bit_length(), count)


# ---------------------------------------------------------------------------------------------
# Column chunks: pages to (repetition level, definition level, value) triples
# ---------------------------------------------------------------------------------------------

def read_chunk(buf, meta, node, where):
    """Every (rep, def, value) triple of one column chunk; value is None where def < max_def."""
    codec = meta.get(4, 0)
    total = need(meta, 5, "ColumnMetaData.num_values", where)
    pos = meta.get(9)
    dpo = meta.get(11)
    if dpo is not None and 0 < dpo < (pos if pos is not None else dpo + 1):
        pos = dpo  # the dictionary page comes first (some writers set the offset to 0: ignore it)
    if pos is None or pos < 4:
        raise ParquetError(f"{where}: bad data page offset {pos}")
    end = pos + need(meta, 7, "ColumnMetaData.total_compressed_size", where)
    if end > len(buf) - 8:
        raise ParquetError(f"{where}: the column chunk runs past the footer (file truncated?)")
    reps, defs, vals, dictionary = [], [], [], None
    while len(reps) < total:
        pwhere = f"{where}, page at byte {pos}"
        if pos >= end:
            raise ParquetError(f"{pwhere}: the chunk ends after {len(reps)} of its {total} values")
        hdr = Compact(buf, pos, end, f"{pwhere}: page header")
        head = hdr.struct()
        pos = hdr.pos
        ptype = need(head, 1, "PageHeader.type", pwhere)
        size = need(head, 3, "PageHeader.compressed_page_size", pwhere)
        usize = need(head, 2, "PageHeader.uncompressed_page_size", pwhere)
        if size < 0 or usize < 0 or pos + size > end:
            raise ParquetError(f"{pwhere}: page of {size} bytes runs past the column chunk")
        body = buf[pos:pos + size]
        pos += size
        if ptype == DICTIONARY_PAGE:
            dh = need(head, 7, "dictionary_page_header", pwhere)
            if dh.get(2, 0) not in (0, 2):
                raise ParquetError(f"{pwhere}: unsupported dictionary encoding {ENCODINGS.get(dh.get(2), dh.get(2))}")
            data = decompress(codec, body, usize, pwhere)
            dictionary = plain_values(Bytes(data, pwhere), node, need(dh, 1, "num_values", pwhere))
        elif ptype == DATA_PAGE:
            r, d, v = data_page_v1(need(head, 5, "data_page_header", pwhere),
                                   decompress(codec, body, usize, pwhere), node, dictionary, pwhere)
            reps += r
            defs += d
            vals += v
        elif ptype == DATA_PAGE_V2:
            r, d, v = data_page_v2(need(head, 8, "data_page_header_v2", pwhere), body, usize, codec,
                                   node, dictionary, pwhere)
            reps += r
            defs += d
            vals += v
        elif ptype != INDEX_PAGE:
            raise ParquetError(f"{pwhere}: unknown page type {ptype}")
    if len(reps) != total:
        raise ParquetError(f"{where}: pages hold {len(reps)} values, the column chunk says {total}")
    return reps, defs, vals


def spread(defs, present, max_def, where):
    """The page's values placed at the slots whose definition level is max_def; None elsewhere."""
    out, it = [], iter(present)
    try:
        for d in defs:
            out.append(next(it) if d == max_def else None)
    except StopIteration:
        raise ParquetError(f"{where}: fewer values than definition levels at max level")
    return out


def data_page_v1(dh, data, node, dictionary, where):
    """One v1 data page: levels (each with a length prefix), then values, all compressed."""
    n = need(dh, 1, "DataPageHeader.num_values", where)
    cur = Bytes(data, where)
    reps = levels_v1(cur, dh.get(4, 3), node.max_rep, n)
    defs = levels_v1(cur, dh.get(3, 3), node.max_def, n)
    present = sum(1 for d in defs if d == node.max_def)
    vals = decode_values(cur, node, need(dh, 2, "DataPageHeader.encoding", where), present, dictionary)
    return reps, defs, spread(defs, vals, node.max_def, where)


def data_page_v2(dh, body, usize, codec, node, dictionary, where):
    """One v2 data page: uncompressed levels of known byte lengths, then the values, which
    alone are compressed (unless is_compressed is false)."""
    n = need(dh, 1, "DataPageHeaderV2.num_values", where)
    rlen = need(dh, 6, "repetition_levels_byte_length", where)
    dlen = need(dh, 5, "definition_levels_byte_length", where)
    if rlen < 0 or dlen < 0 or rlen + dlen > len(body):
        raise ParquetError(f"{where}: level lengths {rlen} + {dlen} exceed the page's {len(body)} bytes")
    reps = rle_hybrid(Bytes(body, where, 0, rlen), node.max_rep.bit_length(), n) if node.max_rep else [0] * n
    defs = rle_hybrid(Bytes(body, where, rlen, rlen + dlen), node.max_def.bit_length(), n) if node.max_def else [0] * n
    rest = body[rlen + dlen:]
    vsize = usize - rlen - dlen
    if dh.get(7, True) and rest:
        rest = decompress(codec, rest, vsize, where)
    present = sum(1 for d in defs if d == node.max_def)
    vals = decode_values(Bytes(rest, where), node, need(dh, 4, "DataPageHeaderV2.encoding", where), present,
                         dictionary)
    return reps, defs, spread(defs, vals, node.max_def, where)


# ---------------------------------------------------------------------------------------------
# Records: levels back to nested values
# ---------------------------------------------------------------------------------------------

def assemble_leaf(leaf, reps, defs, vals, where):
    """The records of one column as partial trees: {child: ...} along the leaf's path, a list
    at each repeated node, None where an optional node is undefined."""
    path = []
    n = leaf
    while n.parent is not None:
        path.append(n)
        n = n.parent
    path.reverse()
    records = []
    for r, d, v in zip(reps, defs, vals):
        if r == 0:
            records.append({})
        elif not records:
            raise ParquetError(f"{where}: the first value has repetition level {r}, not 0")
        cur = records[-1]
        for node in path:
            defined = d >= node.max_def
            leaf_here = node is leaf
            if node.repetition == REPEATED:
                lst = cur.setdefault(node.name, [])
                if not isinstance(lst, list):
                    raise ParquetError(f"{where}: inconsistent levels at {node.name!r}")
                if not defined:
                    break
                if r > node.max_rep:  # continues the current element of this list
                    if not lst:
                        raise ParquetError(f"{where}: repetition level {r} continues an empty list")
                    cur = lst[-1]
                else:  # starts a new element here
                    lst.append(v if leaf_here else {})
                    if leaf_here:
                        break
                    cur = lst[-1]
            else:
                if not defined:
                    cur.setdefault(node.name, None)
                    break
                if leaf_here:
                    cur[node.name] = v
                    break
                nxt = cur.get(node.name)
                if nxt is None:
                    nxt = cur[node.name] = {}
                cur = nxt
    return records


def merge(a, b, where):
    """Two partial trees of the same record (from different columns) as one."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k, v in b.items():
            a[k] = merge(a[k], v, where) if k in a else v
        return a
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            raise ParquetError(f"{where}: columns disagree on a list's length ({len(a)} and {len(b)})")
        return [merge(x, y, where) for x, y in zip(a, b)]
    if a is None and b is None:
        return None
    if a is None and b == {} or b is None and a == {}:
        raise ParquetError(f"{where}: columns disagree on whether a group is null")
    raise ParquetError(f"{where}: columns disagree on a record's shape")


def logical(node, value):
    """A merged value with the schema's annotations applied: LIST groups become lists of their
    elements, MAP groups dicts, other groups dicts of their children in schema order."""
    if node.is_leaf():
        if node.repetition == REPEATED:
            return list(value)
        return value
    if node.repetition == REPEATED:
        return [group_value(node, v) for v in value]
    if value is None:
        return None
    return group_value(node, value)


def group_value(node, value):
    """One instance of a group (value: its dict of merged children, or None)."""
    if value is None:
        return None
    if node.is_list() and len(node.children) == 1 and node.children[0].repetition == REPEATED:
        rep = node.children[0]
        items = value.get(rep.name, [])
        if rep.is_leaf() or len(rep.children) != 1 or rep.name == "array" or rep.name == node.name + "_tuple":
            return logical(rep, items)  # legacy two-level lists: the repeated node is the element
        elem = rep.children[0]
        return [logical(elem, it.get(elem.name)) for it in items]
    if node.is_map() and len(node.children) == 1 and node.children[0].repetition == REPEATED:
        kv = node.children[0]
        key = kv.children[0]
        val = kv.children[1] if len(kv.children) > 1 else None
        return {logical(key, e.get(key.name)): (logical(val, e.get(val.name)) if val else None)
                for e in value.get(kv.name, [])}
    return {c.name: logical(c, value.get(c.name, [] if c.repetition == REPEATED else None))
            for c in node.children}


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

class ParquetFile:
    """A parquet file read whole into memory: its schema, row groups and records."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                self.buf = memoryview(f.read())
        except OSError as e:
            raise ParquetError(f"{path}: {e.strerror}")
        self.meta = read_footer(self.buf, path)
        self.root, self.leaves = build_schema(need(self.meta, 2, "FileMetaData.schema", f"{path}: footer"),
                                              f"{path}: schema")
        self.num_rows = need(self.meta, 3, "FileMetaData.num_rows", f"{path}: footer")
        self.row_groups = self.meta.get(4, [])

    def field(self, *names):
        """The schema node at the path names (top-level name first), or None."""
        n = self.root
        for name in names:
            n = next((c for c in n.children if c.name == name), None)
            if n is None:
                return None
        return n

    def read_row_group(self, i):
        """Row group i's records as dicts of top-level fields."""
        rg = self.row_groups[i]
        where = f"{self.path}: row group {i}"
        chunks = need(rg, 1, "RowGroup.columns", where)
        if len(chunks) != len(self.leaves):
            raise ParquetError(f"{where}: {len(chunks)} column chunks for {len(self.leaves)} schema columns")
        merged = None
        for leaf, chunk in zip(self.leaves, chunks):
            cwhere = f"{where}, column {'.'.join(leaf.path)}"
            meta = need(chunk, 3, "ColumnChunk.meta_data", cwhere)
            if chunk.get(1):
                raise ParquetError(f"{cwhere}: the column lives in another file ({chunk[1]!r})")
            reps, defs, vals = read_chunk(self.buf, meta, leaf, cwhere)
            recs = assemble_leaf(leaf, reps, defs, vals, cwhere)
            if merged is None:
                merged = recs
            elif len(recs) != len(merged):
                raise ParquetError(f"{cwhere}: {len(recs)} records, the columns before it {len(merged)}")
            else:
                merged = [merge(a, b, cwhere) for a, b in zip(merged, recs)]
        nrows = need(rg, 3, "RowGroup.num_rows", where)
        merged = merged or []
        if len(merged) != nrows:
            raise ParquetError(f"{where}: {len(merged)} records, the row group says {nrows}")
        return [group_value(self.root, r) for r in merged]

    def records(self, limit=None):
        """Every record in file order (at most limit), one row group in memory at a time."""
        n = 0
        for i in range(len(self.row_groups)):
            for rec in self.read_row_group(i):
                if limit is not None and n >= limit:
                    return
                yield rec
                n += 1


# ---------------------------------------------------------------------------------------------
# The Skywork-OR1-RL-Data rows
# ---------------------------------------------------------------------------------------------

# Fields the conversion needs (a path of names); model_difficulty is optional.
NEEDED = [("data_source",), ("prompt",), ("ability",), ("reward_model", "ground_truth"),
          ("reward_model", "style"), ("extra_info", "index")]


def check_schema(pf):
    """ParquetError naming the first field of NEEDED the file's schema lacks."""
    for p in NEEDED:
        if pf.field(*p) is None:
            raise ParquetError(f"{pf.path}: schema: no column {'.'.join(p)} (is this Skywork-OR1-RL-Data?)")
    prompt = pf.field("prompt")
    names = {n.name for n in leaves_under(prompt)}
    if not {"role", "content"} <= names:
        raise ParquetError(f"{pf.path}: schema: prompt must be a list of {{role, content}}")


def leaves_under(node):
    """The leaf nodes below node."""
    if node.is_leaf():
        return [node]
    return [x for c in node.children for x in leaves_under(c)]


def to_row(rec, where):
    """One parquet record as an or1 row (fixed key order; extra_info keeps every key)."""
    def want(v, typ, key):
        """v if it is of type typ (a bool is not an int here), else ParquetError naming key."""
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            got = "null" if v is None else type(v).__name__
            raise ParquetError(f"{where}: key {key!r} must be {typ.__name__}, not {got}")
        return v

    prompt = want(rec.get("prompt"), list, "prompt")
    messages = []
    for i, m in enumerate(prompt):
        want(m, dict, f"prompt[{i}]")
        messages.append({"role": want(m.get("role"), str, f"prompt[{i}].role"),
                         "content": want(m.get("content"), str, f"prompt[{i}].content")})
    rm = want(rec.get("reward_model"), dict, "reward_model")
    extra = want(rec.get("extra_info"), dict, "extra_info")
    out_extra = {"index": want(extra.get("index"), int, "extra_info.index")}
    for k, v in extra.items():
        if k != "index":
            out_extra[k] = v
    md = out_extra.get("model_difficulty")
    if md is not None:
        want(md, dict, "extra_info.model_difficulty")
        for k, v in md.items():
            if v is not None:
                want(v, int, f"extra_info.model_difficulty.{k}")
    return {"data_source": want(rec.get("data_source"), str, "data_source"),
            "prompt": messages,
            "ability": want(rec.get("ability"), str, "ability"),
            "reward_model": {"ground_truth": want(rm.get("ground_truth"), str, "reward_model.ground_truth"),
                             "style": want(rm.get("style"), str, "reward_model.style")},
            "extra_info": out_extra}


def convert(inputs, out, limit):
    """Writes the rows of every input (at most limit in all) to out atomically; returns the
    count per data_source."""
    counts = {}
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".parquet_to_rows.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            total = 0
            for path in inputs:
                pf = ParquetFile(path)
                check_schema(pf)
                left = None if limit is None else limit - total
                for i, rec in enumerate(pf.records(left)):
                    row = to_row(rec, f"{path}: row {i}")
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
                    counts[row["data_source"]] = counts.get(row["data_source"], 0) + 1
                    total += 1
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    return counts


def main(argv):
    """The command line: parse, convert, print the summary or the error."""
    ap = argparse.ArgumentParser(description="Skywork-OR1-RL-Data parquet files -> or1 JSONL rows")
    ap.add_argument("inputs", nargs="+", metavar="IN.parquet")
    ap.add_argument("--out", required=True, metavar="OUT.jsonl")
    ap.add_argument("--limit", type=int, metavar="N", help="stop after N rows in all")
    a = ap.parse_args(argv)
    if a.limit is not None and a.limit < 0:
        ap.error("--limit must be >= 0")
    try:
        counts = convert(a.inputs, a.out, a.limit)
    except ParquetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {a.out}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"{sum(counts.values())} rows -> {a.out}")
    for src in sorted(counts):
        print(f"  {src}: {counts[src]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
