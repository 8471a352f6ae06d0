#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/): small valid files of each format
and a few near-misses, built here byte by byte (standard library only) so that the seeds do not depend on the
code under test. Run from anywhere: python3 tests/fuzz/make_corpus.py
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli, reflected), bit by bit."""
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def npy(header_text, data=b"", version=1):
    magic = b"\x93NUMPY" + bytes([version, 0])
    size_bytes = 2 if version == 1 else 4
    unpadded = len(magic) + size_bytes + len(header_text) + 1
    header = (header_text + " " * ((64 - unpadded % 64) % 64) + "\n").encode("latin1")
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return magic + length + header + data


def npy_seeds():
    write("npy_header", "c_f8.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
                                        struct.pack("<6d", 1, 2, 3, 4, 5, 6)))
    write("npy_header", "f_f4.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }",
                                        struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
    write("npy_header", "v2_i8.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }",
                                         struct.pack("<4q", 1, 2, 3, 4), version=2))
    write("npy_header", "v3_u1.npy", npy("{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }",
                                         bytes([1, 2, 3, 4]), version=3))
    write("npy_header", "scalar_s3.npy", npy("{'descr': '|S3', 'fortran_order': False, 'shape': (), }", b"csr"))
    write("npy_header", "big_endian.npy", npy("{'descr': '>f8', 'fortran_order': False, 'shape': (1, 1), }",
                                              struct.pack(">d", 1)))
    write("npy_header", "short_data.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (9, 9), }",
                                              struct.pack("<2d", 1, 2)))


def mtx_seeds():
    banner = "%%MatrixMarket matrix coordinate "
    write("matrix_market", "general.mtx",
          (banner + "real general\n% a comment\n3 4 4\n1 1 1.5\n2 3 +2e0\n3 4 0.25\n1 1 1\n").encode())
    write("matrix_market", "symmetric.mtx", (banner + "real symmetric\n3 3 3\n1 1 1\n2 1 2\n3 2 3\n").encode())
    write("matrix_market", "pattern.mtx", (banner + "pattern general\n2 2 2\n1 2\n2 1\n").encode())
    write("matrix_market", "integer.mtx", (banner + "integer general\r\n2 2 1\r\n\r\n2 2 7\r\n").encode())
    write("matrix_market", "tiny_value.mtx", (banner + "real general\n1 1 1\n1 1 1e-400\n").encode())
    write("matrix_market", "array.mtx", b"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n")


def dcsr(rows, cols, indptr, indices, values, word=8, version=2):
    """A .dcsr file as src/io/dcsr.cpp writes it (one checksum chunk for rows > 0)."""
    def align(x):
        return (x + 63) // 64 * 64
    nnz = len(values)
    indptr_offset = 64
    indices_offset = align(indptr_offset + (rows + 1) * 8)
    values_offset = align(indices_offset + nnz * 4)
    header = b"DNMFCSR\0" + struct.pack("<IIqqqQQQ", version, word, rows, cols, nnz, indptr_offset, indices_offset,
                                        values_offset)
    body = bytearray(header)
    body += struct.pack("<%dq" % (rows + 1), *indptr)
    body += b"\0" * (indices_offset - len(body))
    body += struct.pack("<%di" % nnz, *indices)
    body += b"\0" * (values_offset - len(body))
    code = "d" if word == 8 else "f"
    packed_values = struct.pack("<%d%s" % (nnz, code), *values)
    body += packed_values
    if version == 1:
        return bytes(body)
    body += b"\0" * (align(len(body)) - len(body))
    chunks = b""
    if rows > 0:
        ends = struct.pack("<%dq" % rows, *indptr[1:])
        chunks = struct.pack("<qIII", rows, crc32c(ends), crc32c(struct.pack("<%di" % nnz, *indices)),
                             crc32c(packed_values)) + b"\0" * 4
    body += struct.pack("<QII", len(chunks) // 24, crc32c(header), crc32c(chunks)) + chunks
    return bytes(body)


def dcsr_seeds():
    write("dcsr", "f8.dcsr", dcsr(3, 4, [0, 2, 2, 4], [0, 3, 1, 2], [1.0, 2.0, 0.5, 4.0]))
    write("dcsr", "f4.dcsr", dcsr(2, 2, [0, 1, 2], [1, 0], [3.0, 1e-3], word=4))
    write("dcsr", "empty.dcsr", dcsr(0, 5, [0], [], []))
    write("dcsr", "v1.dcsr", dcsr(2, 3, [0, 1, 3], [2, 0, 1], [1.0, 2.0, 3.0], version=1))
    write("dcsr", "negative.dcsr", dcsr(1, 2, [0, 2], [0, 1], [1.0, -1.0]))
    # Inner row pointers whose difference overflows int64 (found by fuzz.dcsr): a block read of row 1 must
    # reject them before subtracting.
    write("dcsr", "overflow_span.dcsr", dcsr(3, 2, [0, -(2**62) - 5, 2**62 + 5, 2], [0, 1], [1.0, 2.0], version=1))


def job(k, p, m, n, rel_error=0.25, w=None, h=None):
    """An NMFk job file as src/nmfk/checkpoint.cpp writes it (version 2, CRC-32C)."""
    w = w or [1.0 / m] * (m * k)
    h = h or [0.5] * (k * n)
    def header(checksum):
        return b"DNMFKJOB" + struct.pack("<IIqqqqqdd", 2, checksum, k, p, m, n, 30, rel_error, 1.5)
    arrays = struct.pack("<%dd" % len(w), *w) + struct.pack("<%dd" % len(h), *h)
    return header(crc32c(arrays, crc32c(header(0)))) + arrays


def checkpoint_seeds():
    write("checkpoint", "k2_p0.job", job(2, 0, 3, 4))
    write("checkpoint", "k1_p3.job", job(1, 3, 5, 2, rel_error=0.5))
    write("checkpoint", "nan.job", job(2, 1, 3, 4, w=[float("nan")] + [0.1] * 5))


if __name__ == "__main__":
    npy_seeds()
    mtx_seeds()
    dcsr_seeds()
    checkpoint_seeds()
