"""Reading a capture file or pipe: pcap or pcapng, told apart by their first bytes, read with dpkt one packet at a time.

Rules:
- :func:`packets` yields ``(capture time, link type, packet bytes)`` as it reads, so a pipe from ``tcpdump -U -w -``
  is decoded while it is being written; nothing is read ahead.
- A capture that is neither format is :class:`CaptureError`; a capture that ends inside a packet record (cut short,
  or its writer killed) ends the packets there and :attr:`Reader.truncated` says so. dpkt's own exceptions never
  leave this module.
- pcapng: dpkt reads the link type of the first interface; packets of a second interface of another link type are
  decoded as if they were of the first (dumpcap and tcpdump write one interface per file unless asked for several).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

import dpkt

_PCAP_MAGICS = {0xA1B2C3D4, 0xD4C3B2A1, 0xA1B23C4D, 0x4D3CB2A1}
_PCAPNG_MAGIC = 0x0A0D0D0A


class CaptureError(Exception):
    """The input is not a capture this tool reads."""


class _Prefixed:
    """A binary stream whose first bytes were already read to tell the format: they are read again first."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self.head = head
        self.stream = stream
        self.name = getattr(stream, "name", "<stdin>")

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.stream.read(n)
        if n < 0:
            data, self.head = self.head + self.stream.read(), b""
            return data
        data, self.head = self.head[:n], self.head[n:]
        if len(data) < n:
            data += self.stream.read(n - len(data))
        return data


class Reader:
    """The packets of one capture, in the order they were written."""

    def __init__(self, stream: BinaryIO) -> None:
        head = stream.read(4)
        if len(head) < 4:
            raise CaptureError("not a capture: fewer than 4 bytes")
        (magic,) = struct.unpack("<I", head)
        (big,) = struct.unpack(">I", head)
        source = _Prefixed(head, stream)
        try:
            if magic in _PCAP_MAGICS or big in _PCAP_MAGICS:
                self.format = "pcap"
                self._reader: dpkt.pcap.Reader | dpkt.pcapng.Reader = dpkt.pcap.Reader(source)
            elif magic == _PCAPNG_MAGIC:
                self.format = "pcapng"
                self._reader = dpkt.pcapng.Reader(source)
            else:
                raise CaptureError(f"not a pcap or pcapng capture (first bytes {head.hex()})")
            self.linktype: int = int(self._reader.datalink())
        except CaptureError:
            raise
        except Exception as e:  # dpkt raises ValueError, struct.error, dpkt.NeedData ... for a bad header
            raise CaptureError(f"unreadable {getattr(self, 'format', 'capture')} header: {e}") from None
        self.truncated: str | None = None  # why the capture ended early, if it did
        self.count = 0

    def __iter__(self) -> Iterator[tuple[float, int, bytes]]:
        linktype = self.linktype
        it = iter(self._reader)
        while True:
            try:
                ts, data = next(it)
            except StopIteration:
                return
            except Exception as e:  # a record cut short or unreadable: the capture ends here
                self.truncated = f"capture ends inside a packet record after packet {self.count}: {e}"
                return
            self.count += 1
            yield float(ts), linktype, bytes(data)


def packets(stream: BinaryIO) -> Iterator[tuple[float, int, bytes]]:
    """``(capture time, link type, bytes)`` of every packet in a capture (see :class:`Reader`)."""
    return iter(Reader(stream))
