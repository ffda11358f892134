"""TensorFlow's gRPC servers made to listen on loopback only (Linux, ELF).

TensorFlow's ``GrpcServer::Init`` (``tensorflow/core/distributed_runtime/rpc/
grpc_server_lib.cc``, every release from 1.x to 2.21) listens on
``0.0.0.0:PORT``, which gRPC turns into ``[::]:PORT``: every network
interface, and the server has no authentication, so anyone who reaches the
machine could run ops in an emulated pod's worker (or in its chief, which
TensorFlow's remote eager execution also gives a server). No option or
environment variable changes that address.

An emulated pod's processes only talk to each other on this machine, so
while such a server starts, :func:`loopback_only` redirects the ``bind``
calls of TensorFlow's shared libraries: the entries for ``bind`` in their
global offset tables (the pointers through which a library calls libc) point
at a function that replaces a wildcard address by loopback (``0.0.0.0`` by
``127.0.0.1``; ``[::]`` by ``::ffff:127.0.0.1``, IPv4's loopback on the same
dual-stack socket) and passes every other address through unchanged. The
entries are put back as soon as the server is listening. Where this cannot be
done (not Linux, not ELF64, an unknown CPU), :class:`LoopbackUnavailable` is
raised: the caller refuses to start a server on every interface.
"""

import contextlib
import ctypes
import mmap
import os
import socket
import struct
import sys
import threading

__all__ = ["LoopbackUnavailable", "is_loopback_host", "loopback_only"]


class LoopbackUnavailable(RuntimeError):
    """TensorFlow's servers cannot be kept to loopback on this platform."""


def is_loopback_host(host):
    """Whether ``host`` (a name or an address, maybe in brackets) is this machine's loopback."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return socket.inet_pton(socket.AF_INET, host)[0] == 127
    except OSError:
        pass
    try:
        return socket.inet_pton(socket.AF_INET6, host) == socket.inet_pton(
            socket.AF_INET6, "::1")
    except OSError:
        return False


# ELF relocation types of a call through the global offset table, by e_machine
# (elf.h): x86-64's R_X86_64_GLOB_DAT/JUMP_SLOT, AArch64's R_AARCH64_GLOB_DAT/JUMP_SLOT.
_GOT_RELOCATIONS = {62: (6, 7), 183: (1025, 1026)}
_SHT_RELA, _SHT_DYNSYM = 4, 11


def _got_slots(path, symbol):
    """Offsets (from the load base) of ``path``'s GOT entries for ``symbol``.

    Read from the file's section headers; the searches run in C (``find``
    over the mapped file), so a library of hundreds of megabytes takes
    milliseconds.
    """
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return []  # not a little-endian ELF64 file
        machine, = struct.unpack_from("<H", data, 0x12)
        if machine not in _GOT_RELOCATIONS:
            raise LoopbackUnavailable(f"{path}: unknown machine {machine}")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                    for i in range(shnum)]
        slots = []
        for _, kind, _, _, offset, size, link, _, _, _ in sections:
            if kind != _SHT_RELA:
                continue
            symtab = sections[link]
            if symtab[1] != _SHT_DYNSYM:
                continue
            index = _undefined_symbol_index(data, symtab, sections[symtab[6]], symbol)
            if index is None:
                continue
            for rtype in _GOT_RELOCATIONS[machine]:
                needle = struct.pack("<Q", (index << 32) | rtype)
                at = data.find(needle, offset, offset + size)
                while at != -1:
                    if (at - offset) % 24 == 8:  # r_info of an Elf64_Rela
                        slots.append(struct.unpack_from("<Q", data, at - 8)[0])
                    at = data.find(needle, at + 1, offset + size)
        return slots


def _undefined_symbol_index(data, symtab, strtab, symbol):
    name = b"\0" + symbol.encode() + b"\0"
    str_offset, str_size = strtab[4], strtab[5]
    at = data.find(name, str_offset, str_offset + str_size)
    if at == -1:
        return None
    needle = struct.pack("<I", at + 1 - str_offset)
    sym_offset, sym_size = symtab[4], symtab[5]
    at = data.find(needle, sym_offset, sym_offset + sym_size)
    while at != -1:
        if (at - sym_offset) % 24 == 0:
            shndx, = struct.unpack_from("<H", data, at + 6)
            if shndx == 0:  # undefined here: imported
                return (at - sym_offset) // 24
        at = data.find(needle, at + 1, sym_offset + sym_size)
    return None


def _tensorflow_libraries():
    """``{path: load base}`` of the loaded shared objects of TensorFlow's package."""
    import tensorflow  # pylint: disable=import-outside-toplevel
    root = os.path.dirname(os.path.realpath(tensorflow.__file__)) + os.sep
    bases = {}
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) < 6:
                continue
            path = fields[5].strip()
            if path.startswith(root) and int(fields[2], 16) == 0:
                start = int(fields[0].split("-")[0], 16)
                bases[path] = min(start, bases.get(path, start))
    return bases


_libc = ctypes.CDLL(None, use_errno=True)
_libc_bind = _libc.bind
_libc_bind.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32)
_libc_bind.restype = ctypes.c_int
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_PROT_READ, _PROT_WRITE = 1, 2
_PAGE = mmap.PAGESIZE

_IPV4_ANY = bytes(4)
_IPV6_ANY = bytes(16)
_IPV4_LOOPBACK = socket.inet_pton(socket.AF_INET, "127.0.0.1")
_IPV4_MAPPED_LOOPBACK = socket.inet_pton(socket.AF_INET6, "::ffff:127.0.0.1")


def _loopback_bind(fd, address, length):
    """libc's ``bind``, with a wildcard address replaced by loopback."""
    family = ctypes.c_ushort.from_address(address).value if address else None
    raw = ctypes.string_at(address, length) if address else b""
    if family == socket.AF_INET and length >= 8 and raw[4:8] == _IPV4_ANY:
        raw = raw[:4] + _IPV4_LOOPBACK + raw[8:]
    elif family == socket.AF_INET6 and length >= 24 and raw[8:24] == _IPV6_ANY:
        raw = raw[:8] + _IPV4_MAPPED_LOOPBACK + raw[24:]
    else:
        return _libc_bind(fd, address, length)
    buffer = ctypes.create_string_buffer(raw, len(raw))
    return _libc_bind(fd, ctypes.addressof(buffer), length)


_BIND_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32,
                              use_errno=True)
_replacement = _BIND_TYPE(_loopback_bind)  # kept alive for the process's life
_lock = threading.Lock()


def _read_only_pages(slots):
    """The pages holding ``slots`` that are not writable (full RELRO), from /proc/self/maps."""
    pages = {slot - slot % _PAGE for slot in slots}
    read_only = set()
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            span, perms = line.split(None, 2)[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            read_only.update(p for p in pages if start <= p < end and "w" not in perms)
    return sorted(read_only)


def _protect(pages, protection):
    for page in pages:
        if _libc.mprotect(page, _PAGE, protection) != 0:
            raise LoopbackUnavailable(f"mprotect: {os.strerror(ctypes.get_errno())}")


@contextlib.contextmanager
def loopback_only():
    """Within this block, TensorFlow's servers listen on loopback only.

    Raises :class:`LoopbackUnavailable` (before anything is changed) where the
    redirection cannot be made; put back however the block ends.
    """
    if not sys.platform.startswith("linux") or struct.calcsize("P") != 8:
        raise LoopbackUnavailable(f"{sys.platform} ({8 * struct.calcsize('P')}-bit) "
                                  f"is not 64-bit Linux")
    with _lock:
        slots = []
        for path, base in _tensorflow_libraries().items():
            slots.extend(base + offset for offset in _got_slots(path, "bind"))
        if not slots:
            raise LoopbackUnavailable("no TensorFlow library calls bind()")
        target = ctypes.cast(_replacement, ctypes.c_void_p).value
        saved = [(slot, ctypes.c_uint64.from_address(slot).value) for slot in slots]
        # A read-only page (full RELRO) would fault on a plain write.
        read_only = _read_only_pages(slots)
        _protect(read_only, _PROT_READ | _PROT_WRITE)
        try:
            for slot, _ in saved:
                ctypes.c_uint64.from_address(slot).value = target
            yield
        finally:
            for slot, value in saved:
                ctypes.c_uint64.from_address(slot).value = value
            _protect(read_only, _PROT_READ)
