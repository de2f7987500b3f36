"""Edits a trainer checkpoint (safetensors: 8-byte little-endian header
length, JSON header, tensor data) the way a damaged or hostile file would
look, for the checkpoint tests.

    edit_checkpoint.py FILE set KEY=VALUE ...   manifest fields (VALUE '-' deletes)
    edit_checkpoint.py FILE tensor NAME FIELD JSON   a tensor's header entry field
    edit_checkpoint.py FILE add NAME            an extra tensor entry (no data)
    edit_checkpoint.py FILE drop NAME           NAME's entry and its bytes removed
    edit_checkpoint.py FILE flip NAME           flip one bit of NAME's data
    edit_checkpoint.py FILE nan NAME            NaN in NAME's first element, crc32 updated
    edit_checkpoint.py FILE escape KEY          write KEY's value as \\uXXXX escapes
    edit_checkpoint.py FILE length N            set the header length field to N
"""

import json
import struct
import sys
import zlib


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def save(path, header, body, text=None):
    text = (text if text is not None else json.dumps(header)).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + body)


def main():
    path, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    header, body = load(path)
    meta = header["__metadata__"]
    if command == "set":
        for arg in args:
            key, value = arg.split("=", 1)
            if value == "-":
                del meta[key]
            else:
                meta[key] = value
    elif command == "tensor":
        header[args[0]][args[1]] = json.loads(args[2])
    elif command == "drop":
        begin, end = header.pop(args[0])["data_offsets"]
        meta.pop("crc32." + args[0], None)
        for entry in header.values():
            if isinstance(entry, dict) and "data_offsets" in entry:
                entry["data_offsets"] = [o - (end - begin) if o >= end else o
                                         for o in entry["data_offsets"]]
        body = body[:begin] + body[end:]
    elif command == "add":
        header[args[0]] = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    elif command in ("flip", "nan"):
        begin, end = header[args[0]]["data_offsets"]
        body = bytearray(body)
        if command == "flip":
            body[begin + 1] ^= 0x10
        else:
            body[begin : begin + 4] = struct.pack("<f", float("nan"))
            crc = zlib.crc32(bytes(body[begin:end]))
            meta["crc32." + args[0]] = "%08x" % crc
        body = bytes(body)
    elif command == "escape":
        text = json.dumps(header)
        value = json.dumps(meta[args[0]])
        escaped = '"' + "".join("\\u%04x" % ord(c) for c in meta[args[0]]) + '"'
        assert text.count(value) == 1
        save(path, header, body, text.replace(value, escaped))
        return
    elif command == "length":
        data = open(path, "rb").read()
        open(path, "wb").write(struct.pack("<Q", int(args[0])) + data[8:])
        return
    else:
        sys.exit("unknown command " + command)
    save(path, header, body)


main()
