"""Link, IP and transport headers of captured packets: a packet's bytes → a TCP segment or a UDP datagram.

Rules:
- Link layers: Ethernet (VLAN tags skipped), Linux cooked capture v1 (SLL, what ``tcpdump -i any`` wrote before
  libpcap 1.10) and v2 (SLL2), BSD loopback (null, either byte order) and raw IP. Network layers: IPv4 and IPv6
  (extension headers skipped). Anything else — ARP, ICMP, a fragment, a header cut short by the snapshot length —
  is not a segment: :func:`decode_packet` returns ``None`` and the caller counts it.
- Pure and total: never raises on any bytes (the fuzz harness ``fuzz/fuzz_capture.py`` checks it). Offsets are
  checked before every read.
- The payload is a ``memoryview`` slice of the packet (no copy); IP addresses are text (``127.0.0.1``, ``::1``).
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

# Link types (pcap LINKTYPE_* numbers).
NULL = 0
ETHERNET = 1
RAW = 101
RAW_ALT = (12, 14)  # DLT_RAW on some systems
IPV4_LINK = 228
IPV6_LINK = 229
LOOP = 108
SLL = 113
SLL2 = 276

LINK_NAMES = {NULL: "null", ETHERNET: "ethernet", RAW: "raw", LOOP: "loop", SLL: "sll", SLL2: "sll2"}

_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_VLAN = (0x8100, 0x88A8, 0x9100)
_BSD_AF_INET6 = (24, 28, 30)  # AF_INET6 on NetBSD/OpenBSD, FreeBSD, macOS
_TCP = 6
_UDP = 17
_IPV6_SKIPPED = (0, 43, 60)  # hop-by-hop, routing, destination options
_IPV6_FRAGMENT = 44

FIN = 0x01
SYN = 0x02
RST = 0x04
ACK = 0x10

_U16 = struct.Struct(">H")
_TCP_HEAD = struct.Struct(">HHIIBB")


@dataclass(frozen=True, slots=True)
class TcpSegment:
    """A TCP segment: endpoints, sequence and acknowledgement numbers, flags and payload."""

    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    flags: int
    payload: memoryview
    ack: int = 0  # meaningful when ``flags & ACK``


@dataclass(frozen=True, slots=True)
class UdpDatagram:
    """A UDP datagram."""

    src: str
    sport: int
    dst: str
    dport: int
    payload: memoryview


def _network(linktype: int, data: memoryview) -> tuple[int, int] | None:
    """(IP version, offset of the IP header) for a packet of ``linktype``, or None."""
    n = len(data)
    if linktype == ETHERNET:
        pos = 12
        while n >= pos + 2:
            (kind,) = _U16.unpack_from(data, pos)
            if kind in _VLAN:
                pos += 4
                continue
            return _by_ethertype(kind, pos + 2)
        return None
    if linktype == SLL:
        return _by_ethertype(_U16.unpack_from(data, 14)[0], 16) if n >= 16 else None
    if linktype == SLL2:
        return _by_ethertype(_U16.unpack_from(data, 0)[0], 20) if n >= 20 else None
    if linktype in (NULL, LOOP):
        if n < 4:
            return None
        family = int.from_bytes(data[:4], "big" if linktype == LOOP else "little")
        if linktype == NULL and family > 0xFFFF:  # written by a big-endian host
            family = int.from_bytes(data[:4], "big")
        return (4, 4) if family == 2 else (6, 4) if family in _BSD_AF_INET6 else None
    if linktype in (RAW, *RAW_ALT, IPV4_LINK, IPV6_LINK):
        return ((data[0] >> 4) if n else 0, 0)
    return None


def _by_ethertype(kind: int, pos: int) -> tuple[int, int] | None:
    return (4, pos) if kind == _ETH_IPV4 else (6, pos) if kind == _ETH_IPV6 else None


def _ip(version: int, data: memoryview, pos: int) -> tuple[str, str, int, int, int] | None:
    """(src, dst, protocol, payload start, payload end) of an unfragmented IP packet at ``pos``, or None."""
    n = len(data)
    if version == 4:
        if n < pos + 20 or data[pos] >> 4 != 4:
            return None
        ihl = (data[pos] & 0x0F) * 4
        (total,) = _U16.unpack_from(data, pos + 2)
        (fragment,) = _U16.unpack_from(data, pos + 6)
        if ihl < 20 or fragment & 0x3FFF:  # more-fragments flag or a fragment offset
            return None
        end = min(n, pos + total) if total >= ihl else n  # total 0: TCP segmentation offload
        if end < pos + ihl:
            return None
        src = str(ipaddress.IPv4Address(bytes(data[pos + 12 : pos + 16])))
        dst = str(ipaddress.IPv4Address(bytes(data[pos + 16 : pos + 20])))
        return src, dst, data[pos + 9], pos + ihl, end
    if version == 6:
        if n < pos + 40 or data[pos] >> 4 != 6:
            return None
        (length,) = _U16.unpack_from(data, pos + 4)
        end = min(n, pos + 40 + length) if length else n
        nxt = data[pos + 6]
        src = str(ipaddress.IPv6Address(bytes(data[pos + 8 : pos + 24])))
        dst = str(ipaddress.IPv6Address(bytes(data[pos + 24 : pos + 40])))
        pos += 40
        while nxt in _IPV6_SKIPPED:
            if end < pos + 8:
                return None
            nxt, pos = data[pos], pos + (data[pos + 1] + 1) * 8
        if nxt == _IPV6_FRAGMENT or pos > end:
            return None
        return src, dst, nxt, pos, end
    return None


def decode_packet(linktype: int, packet: bytes | memoryview) -> TcpSegment | UdpDatagram | None:
    """The TCP segment or UDP datagram in a captured packet, or None for anything else."""
    data = memoryview(packet)
    found = _network(linktype, data)
    if found is None:
        return None
    ip = _ip(found[0], data, found[1])
    if ip is None:
        return None
    src, dst, protocol, pos, end = ip
    if protocol == _TCP:
        if end < pos + 20:
            return None
        sport, dport, seq, ack, offset, flags = _TCP_HEAD.unpack_from(data, pos)
        header = (offset >> 4) * 4
        if header < 20 or pos + header > end:
            return None
        return TcpSegment(src, sport, dst, dport, seq, flags, data[pos + header : end], ack)
    if protocol == _UDP:
        if end < pos + 8:
            return None
        sport, dport = struct.unpack_from(">HH", data, pos)
        return UdpDatagram(src, sport, dst, dport, data[pos + 8 : end])
    return None
